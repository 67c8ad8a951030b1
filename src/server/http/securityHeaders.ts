/**
 * The Content-Security-Policy of the dashboard's pages (set per request by
 * src/proxy.ts, with a fresh nonce) and the headers every answer gets
 * (next.config.mjs). Scripts run only from this origin with the nonce Next.js
 * puts on its own tags; nothing may frame the pages.
 */
export function pageCsp(nonce: string, { https, styleAttributes = false }: { https: boolean; styleAttributes?: boolean }): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'`,
    `style-src 'self' 'nonce-${nonce}'`,
    // The dashboard's charts and popovers (Recharts, Radix) set style="" attributes, which the server renders
    // into the HTML. Allowed for attributes only, on /admin only: <style> elements and stylesheets still need
    // this origin or the nonce, and scripts are untouched. See README, Security.
    ...(styleAttributes ? ["style-src-attr 'unsafe-inline'"] : []),
    // QR codes of the two-factor enrolment are data: URLs.
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    ...(https ? ["upgrade-insecure-requests"] : []),
  ].join("; ");
}

/** Two years, as hstspreload.org asks; only ever sent over HTTPS. */
export const HSTS = "max-age=63072000; includeSubDomains";
