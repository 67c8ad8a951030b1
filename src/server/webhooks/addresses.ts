import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP } from "node:net";
import { env } from "~/env";

/**
 * Server-side request forgery: an endpoint URL is the client's, and the dispatcher posts to it from inside our
 * network. Only http and https; and unless WEBHOOK_ALLOW_PRIVATE_URLS (tests, development), never an address of
 * loopback, a private range, link-local (cloud metadata), carrier-grade NAT or unique-local IPv6. The address is
 * checked where the connection is made (the socket's lookup, dispatcher.ts), so a name that resolves to a public
 * address when the endpoint is made and to a private one later (DNS rebinding) is refused too.
 */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
  ["224.0.0.0", 3],
] as const)
  PRIVATE.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  PRIVATE.addSubnet(net, prefix, "ipv6");

export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1]!, "ipv4");
  const family = isIP(address);
  if (family === 0) return true; // not an address: refuse rather than guess
  return PRIVATE.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** Why a URL cannot be an endpoint, or null. Names are checked again when connecting (safeLookup). */
export function urlProblem(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "must be http or https";
  if (url.username || url.password) return "must not carry credentials";
  if (env.WEBHOOK_ALLOW_PRIVATE_URLS) return null;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (host === "localhost" || host.endsWith(".localhost")) return "must not be a local address";
  if (isIP(host) !== 0 && isPrivateAddress(host)) return "must not be a private, loopback or link-local address";
  return null;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The socket's name lookup (http.request's `lookup`): refuses private addresses unless they are allowed. */
export function safeLookup(hostname: string, options: object, callback: LookupCallback) {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const list = addresses as LookupAddress[];
    const refused = !env.WEBHOOK_ALLOW_PRIVATE_URLS && list.some((a) => isPrivateAddress(a.address));
    if (refused) {
      const denied = Object.assign(new Error(`${hostname} resolves to a private address`), { code: "EPRIVATE" });
      return callback(denied, []);
    }
    if ((options as { all?: boolean }).all) return callback(null, list);
    return callback(null, list[0]!.address, list[0]!.family);
  });
}
