import { env } from "~/env";
import { PEER_HEADER } from "./peerAddress";

/** Who sent a request, as far as we can tell: for the audit log, sessions and login throttling. */
export type RequestInfo = { address: string | null; userAgent: string | null };

export const NO_REQUEST: RequestInfo = { address: null, userAgent: null };

const normalise = (address: string) => address.replace(/^::ffff:/, "").slice(0, 45);

/**
 * The client's address. With no trusted proxy (TRUSTED_PROXY_HOPS=0) it is the
 * TCP peer's (PEER_HEADER, stamped on every request at boot): whatever the
 * client writes in X-Forwarded-For is ignored. With N trusted proxies, each
 * appends the address it saw, so the Nth entry from the right is the one a proxy
 * of ours wrote about the client; entries further left are the client's own.
 */
export function clientAddress(headers: Headers, trustedHops = env.TRUSTED_PROXY_HOPS): string | null {
  const peer = headers.get(PEER_HEADER) || null;
  if (trustedHops === 0) return peer ? normalise(peer) : null;
  const entries = (headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  // Fewer entries than proxies: a proxy did not append; the leftmost is still one of theirs.
  const entry = entries[entries.length - trustedHops] ?? entries[0] ?? peer;
  return entry ? normalise(entry) : null;
}

export function requestInfo(headers: Headers): RequestInfo {
  return { address: clientAddress(headers), userAgent: headers.get("user-agent")?.slice(0, 255) ?? null };
}
