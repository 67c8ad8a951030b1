import { env } from "~/env";

/** Who sent a request, as far as we can tell: for the audit log, sessions and login throttling. */
export type RequestInfo = { address: string | null; userAgent: string | null };

export const NO_REQUEST: RequestInfo = { address: null, userAgent: null };

/**
 * The client's address from X-Forwarded-For. Next.js sets that header to the
 * socket's address when the client did not send one; each trusted proxy
 * (TRUSTED_PROXY_HOPS) appends the address it saw, so the entry that many
 * places from the end is the one nobody but a proxy of ours wrote.
 */
export function clientAddress(headers: Headers, trustedHops = env.TRUSTED_PROXY_HOPS): string | null {
  const entries = (headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const entry = entries[entries.length - Math.max(trustedHops, 1)] ?? entries[0];
  if (!entry) return null;
  return entry.replace(/^::ffff:/, "").slice(0, 45);
}

export function requestInfo(headers: Headers): RequestInfo {
  return { address: clientAddress(headers), userAgent: headers.get("user-agent")?.slice(0, 255) ?? null };
}
