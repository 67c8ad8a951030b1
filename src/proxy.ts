import { NextResponse, type NextRequest } from "next/server";
import { HSTS, pageCsp } from "~/server/http/securityHeaders";

/**
 * Runs before every page (not the API: see `config`). Makes a nonce, puts the
 * CSP on the request, where Next.js finds the nonce and adds it to its script
 * tags, and on the response, where the browser enforces it.
 */
export function proxy(request: NextRequest) {
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
  const https = request.nextUrl.protocol === "https:" || request.headers.get("x-forwarded-proto") === "https";
  const path = request.nextUrl.pathname;
  // /docs renders Redoc, whose bundled CSS cannot carry the nonce; the dashboard's charts and popovers set
  // style attributes (see pageCsp).
  const csp = pageCsp(nonce, {
    https,
    inlineStyles: path.startsWith("/docs"),
    styleAttributes: path.startsWith("/admin"),
  });
  const headers = new Headers(request.headers);
  headers.set("x-nonce", nonce);
  // The page asked for, so that a signed-out visitor comes back to it after signing in.
  headers.set("x-page", `${request.nextUrl.pathname}${request.nextUrl.search}`);
  headers.set("Content-Security-Policy", csp);
  const response = NextResponse.next({ request: { headers } });
  response.headers.set("Content-Security-Policy", csp);
  if (https) response.headers.set("Strict-Transport-Security", HSTS);
  return response;
}

export const config = {
  // Pages only: API answers get their fixed headers from next.config.mjs, without a trip through here.
  matcher: [{ source: "/((?!api/|_next/static|_next/image|favicon.ico).*)" }],
};
