import http from "node:http";

/**
 * The header that carries the TCP peer's address to the route handlers. Next.js
 * hands them a Request without the socket, and only copies the peer into
 * X-Forwarded-For when the client sent none, so a client could choose its own
 * address. Every incoming request gets this header set here, overwriting any
 * value the client sent, before Next.js sees it.
 */
export const PEER_HEADER = "x-charges-peer-address";

let installed = false;

/**
 * Stamps the peer's address on every request the process's HTTP servers
 * receive. `next start` creates its server itself and gives no hook before
 * routing, so the stamp goes on http.Server's "request" event: one line of
 * work per request, in the process that owns the socket (installed at boot).
 */
export function stampPeerAddresses(): void {
  if (installed) return;
  installed = true;
  const emit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
    if (event === "request") {
      const request = args[0] as http.IncomingMessage;
      request.headers[PEER_HEADER] = request.socket.remoteAddress ?? "";
    }
    return emit.call(this, event, ...args);
  } as typeof http.Server.prototype.emit;
}
