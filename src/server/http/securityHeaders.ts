import answerHeaders from "./answerHeaders.json";

/** The headers every answer gets (next.config.mjs sets them; src/proxy.ts on the answers it makes itself). */
export const EVERY_ANSWER_HEADERS: [string, string][] = Object.entries(answerHeaders.everywhere);

/** API answers are JSON: they may load nothing and be framed by nobody. */
export const API_CSP = answerHeaders.apiCsp;

/**
 * The Content-Security-Policy of the dashboard's pages (set per request by
 * src/proxy.ts, with a fresh nonce) and the headers every answer gets
 * (next.config.mjs). Scripts run only from this origin with the nonce Next.js
 * puts on its own tags; nothing may frame the pages.
 */
export function pageCsp(
  nonce: string,
  {
    https,
    inlineStyles = false,
    styleAttributes = false,
  }: { https: boolean; inlineStyles?: boolean; styleAttributes?: boolean },
): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'`,
    // Inline styles only where a page's library cannot carry the nonce: the API reference (Redoc's bundle
    // injects its CSS when it loads, before it is given the nonce). Scripts keep the nonce everywhere. A nonce
    // would switch 'unsafe-inline' off, so there it is one or the other.
    inlineStyles ? "style-src 'self' 'unsafe-inline'" : `style-src 'self' 'nonce-${nonce}'`,
    // The dashboard's charts and popovers (Recharts, Radix) set style="" attributes, which the server renders
    // into the HTML. Allowed for attributes only, on /admin only: <style> elements and stylesheets still need
    // this origin or the nonce, and scripts are untouched. See docs/security.md.
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
