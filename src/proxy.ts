import { NextResponse, type NextRequest } from "next/server";
import { HSTS, pageCsp } from "~/server/http/securityHeaders";
import { cameOverHttps } from "~/server/http/transport";

/**
 * Runs before every page. Makes a nonce, puts the CSP on the request, where Next.js finds the nonce and adds it to
 * its script tags, and on the response, where the browser enforces it. (A path that is not valid percent-encoding
 * never gets here: src/server/http/peerAddress.ts answers it first, pages and API alike.)
 */
export async function proxy(request: NextRequest) {
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64");
  const https = cameOverHttps(request.headers);
  const path = request.nextUrl.pathname;
  // /docs renders Redoc, whose bundled CSS cannot carry the nonce; the dashboard's signed-in pages render charts
  // and popovers that set style attributes (see pageCsp). The sign-in page has none.
  const csp = pageCsp(nonce, {
    https,
    inlineStyles: path.startsWith("/docs"),
    styleAttributes: path.startsWith("/admin") && !path.startsWith("/admin/login"),
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
  // Pages only: API answers get their fixed headers from next.config.mjs, and a request through a proxy has its
  // body read in full before the route runs, which would undo the route's body deadline (readJsonBody.ts).
  matcher: [{ source: "/((?!api/|_next/static|_next/image|favicon.ico).*)" }],
};
