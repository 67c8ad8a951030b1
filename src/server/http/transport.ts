import { env } from "~/env";

/**
 * Whether the client reached us over HTTPS, which switches on HSTS and `upgrade-insecure-requests`. `next start`
 * serves plain HTTP; a TLS-terminating proxy says the client's scheme in X-Forwarded-Proto, but any client can
 * send that header, so it counts only when proxies are trusted (TRUSTED_PROXY_HOPS > 0), read as the client's
 * address is (src/server/http/requestInfo.ts): the entry the outermost trusted proxy wrote, N from the right.
 */
export function cameOverHttps(headers: Headers, trustedHops = env.TRUSTED_PROXY_HOPS): boolean {
  if (trustedHops === 0) return false;
  const entries = (headers.get("x-forwarded-proto") ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  return (entries[entries.length - trustedHops] ?? entries[0]) === "https";
}
