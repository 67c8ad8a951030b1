import { NextResponse, type NextRequest } from "next/server";
import { errorResponse } from "~/server/http/apiError";
import { presentError } from "~/server/http/presentError";
import { HSTS, pageCsp } from "~/server/http/securityHeaders";

/** Next.js decodes a dynamic segment before the route runs, and answers a malformed one with a plain-text 500. */
function isDecodable(pathname: string): boolean {
  try {
    for (const segment of pathname.split("/")) decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs before every page (not the API, but for its one route with a dynamic
 * segment: see `config`). For pages: makes a nonce, puts the CSP on the
 * request, where Next.js finds the nonce and adds it to its script tags, and on
 * the response, where the browser enforces it.
 */
export async function proxy(request: NextRequest) {
  if (request.nextUrl.pathname.startsWith("/api/")) {
    // A charge id that is not valid percent-encoding names no charge: the API's 404, in its error format.
    if (isDecodable(request.nextUrl.pathname)) return NextResponse.next();
    return presentError(
      request,
      errorResponse("not_found", { message: "No such charge: the id is not valid percent-encoding." }),
    );
  }
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
  // Pages, and the API's one dynamic route (GET /api/charges/:id): API answers get their fixed headers from
  // next.config.mjs, and the charge path (POST /api/charges) never takes a trip through here.
  matcher: [{ source: "/((?!api/|_next/static|_next/image|favicon.ico).*)" }, { source: "/api/charges/:id" }],
};
