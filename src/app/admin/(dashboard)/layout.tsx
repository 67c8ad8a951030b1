import Link from "next/link";
import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { env } from "~/env";
import { currentUser } from "~/server/auth/session";
import { TRPCReactProvider } from "~/trpc/react";

export const dynamic = "force-dynamic";

export default async function DashboardLayout({ children }: { children: ReactNode }) {
  const user = await currentUser();
  if (!user) redirect("/admin/login");
  const engineer = user.role === "engineer";
  const needsTwoFactor = engineer && env.STAFF_REQUIRE_2FA && !user.twoFactorVerified;
  return (
    <TRPCReactProvider>
      <header className="topbar">
        <nav aria-label="Dashboard">
          <strong>Charges</strong>
          <Link href="/admin">Requests</Link>
          <Link href="/admin/rollout">Rollout</Link>
          {engineer && <Link href="/admin/clients">API clients</Link>}
          {engineer && <Link href="/admin/staff">Staff</Link>}
          {engineer && <Link href="/admin/audit">Audit log</Link>}
          <Link href="/admin/account">Account</Link>
        </nav>
        <form action="/api/auth/logout" method="post">
          <span className="muted" data-testid="whoami">
            {user.name} ({user.role})
          </span>{" "}
          <button type="submit">Sign out</button>
        </form>
      </header>
      <main className="page">
        {needsTwoFactor && (
          <p role="status" className="card warn">
            Engineers must sign in with two-factor authentication.{" "}
            <Link href="/admin/account">Set it up under Account</Link>, then sign in again.
          </p>
        )}
        {children}
      </main>
    </TRPCReactProvider>
  );
}
