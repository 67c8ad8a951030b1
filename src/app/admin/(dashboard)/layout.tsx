import Link from "next/link";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import type { ReactNode } from "react";
import { env } from "~/env";
import { currentUser } from "~/server/auth/session";
import { LastRefreshed } from "../_components/LastRefreshed";
import { Nav } from "../_components/Nav";
import { Providers } from "../_components/Providers";
import { SessionWatch } from "../_components/SessionWatch";
import { TimeZoneSwitch } from "../_components/TimeZoneSwitch";

export const dynamic = "force-dynamic";

export default async function DashboardLayout({ children }: { children: ReactNode }) {
  const requestHeaders = await headers();
  const user = await currentUser();
  // Signed out (or never signed in): to the sign-in page, and back here afterwards (src/proxy.ts names the page).
  const page = requestHeaders.get("x-page") ?? "/admin";
  if (!user) redirect(page === "/admin" ? "/admin/login" : `/admin/login?next=${encodeURIComponent(page)}`);
  // A first password still in use: Account, and nothing else, until it is changed.
  if (user.mustChangePassword && !page.startsWith("/admin/account")) redirect("/admin/account");
  const engineer = user.role === "engineer";
  const needsTwoFactor = engineer && env.STAFF_REQUIRE_2FA && !user.twoFactorVerified;
  return (
    <Providers nonce={requestHeaders.get("x-nonce")}>
      <SessionWatch />
      {/* The first thing a keyboard reaches: past the navigation to the page itself. */}
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="border-b border-slate-200 bg-white">
        <div className="mx-auto flex max-w-7xl flex-wrap items-center justify-between gap-2 px-4 py-2">
          <div className="flex flex-wrap items-center gap-3">
            <Link href="/admin" className="font-semibold text-slate-900 no-underline">
              Charges
            </Link>
            <Nav engineer={engineer} />
          </div>
          <TimeZoneSwitch />
          <form action="/api/auth/logout" method="post" className="flex flex-wrap items-center gap-2 text-sm">
            <LastRefreshed />
            <span className="muted" data-testid="whoami">
              {user.name} ({user.role})
            </span>
            <button type="submit" className="btn-secondary">
              Sign out
            </button>
          </form>
        </div>
      </header>
      <main id="main" tabIndex={-1} className="mx-auto max-w-7xl min-w-0 space-y-4 px-4 py-5 focus:outline-none">
        {needsTwoFactor && (
          <p role="status" className="card warn">
            Engineers must sign in with two-factor authentication.{" "}
            <Link href="/admin/account">Set it up under Account</Link>: this session may act as soon as it is on.
          </p>
        )}
        {children}
      </main>
    </Providers>
  );
}
