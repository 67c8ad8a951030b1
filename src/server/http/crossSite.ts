import { env } from "~/env";
import { errorResponse } from "./apiError";

/**
 * Whether a state-changing request comes from the dashboard's own pages. A
 * browser says so in Sec-Fetch-Site (every current one sends it); without it,
 * Origin must name this host. A request with neither is refused: the cookie
 * alone (SameSite=Lax) is not enough to act on.
 */
export function isSameOrigin(headers: Headers): boolean {
  const site = headers.get("sec-fetch-site");
  if (site) return site === "same-origin";
  const origin = headers.get("origin");
  const host =
    env.TRUSTED_PROXY_HOPS > 0 ? (headers.get("x-forwarded-host") ?? headers.get("host")) : headers.get("host");
  if (!origin || !host) return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

/** A 403 for a cross-site request, or null when it may go on. */
export function refuseCrossSite(request: Request): Response | null {
  if (isSameOrigin(request.headers)) return null;
  return errorResponse("cross_site_request");
}
