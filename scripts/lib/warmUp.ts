/**
 * A fresh `next start` loads a route's code on the route's first request, which takes seconds on a busy machine.
 * The browser tests expect a page within 5 s: when they ran after the node tests on the same server, those had
 * warmed it; in a lane of their own they meet it cold (four sign-ins timed out in the first minute at load 20).
 * So before Playwright starts, every dashboard page is asked for once, signed in, and the session ended.
 */
const PAGES = [
  "/admin/login",
  "/admin",
  "/admin/account",
  "/admin/audit",
  "/admin/clients",
  "/admin/customers",
  "/admin/duplicates",
  "/admin/ledger",
  "/admin/reuses",
  "/admin/rollout",
  "/admin/staff",
  "/api/trpc/sweep.status",
  "/docs",
];

export async function warmUpDashboard(baseUrl: string, account: { email: string; password: string }) {
  // A same-origin browser's headers, from an address of its own (documentation range) so no test's throttle counts it.
  const headers: Record<string, string> = {
    "Sec-Fetch-Site": "same-origin",
    "X-Forwarded-For": "2001:db8::fa11",
    "User-Agent": "charges-warm-up",
  };
  const send = (path: string, init: RequestInit = {}) =>
    fetch(`${baseUrl}${path}`, { redirect: "manual", ...init, headers: { ...headers, ...init.headers } }).then(
      async (res) => ({ res, body: await res.arrayBuffer() }),
      () => null,
    );
  const login = await send("/api/auth/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(account),
  });
  const cookie = login?.res.headers.getSetCookie().find((c) => c.startsWith("charges_session="));
  if (cookie) headers.Cookie = cookie.split(";")[0]!;
  const started = Date.now();
  for (const page of PAGES) await send(page);
  if (cookie) await send("/api/auth/logout", { method: "POST" });
  const signedIn = cookie ? "signed in" : `not signed in (${login?.res.status ?? "no answer"})`;
  console.log(`warm-up: ${PAGES.length} pages in ${Date.now() - started} ms, ${signedIn}`);
}
