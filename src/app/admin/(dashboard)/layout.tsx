import Link from "next/link";
import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { getSession } from "~/server/auth/session";
import { TRPCReactProvider } from "~/trpc/react";
import { logout } from "../actions";

export const dynamic = "force-dynamic";

export default async function DashboardLayout({ children }: { children: ReactNode }) {
  const { user } = await getSession();
  if (!user) redirect("/admin/login");
  return (
    <TRPCReactProvider>
      <header className="topbar">
        <nav>
          <strong>Charges</strong>
          <Link href="/admin">Requests</Link>
          <Link href="/admin/rollout">Rollout</Link>
        </nav>
        <form action={logout}>
          <span className="muted" data-testid="whoami">
            {user.name} ({user.role})
          </span>{" "}
          <button type="submit">Sign out</button>
        </form>
      </header>
      <main className="page">{children}</main>
    </TRPCReactProvider>
  );
}
