import http from "node:http";
import { errorResponse } from "./apiError";
import { presentError } from "./presentError";
import { API_CSP, EVERY_ANSWER_HEADERS, HSTS } from "./securityHeaders";
import { cameOverHttps } from "./transport";

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
 * receive, and answers a path that is not valid percent-encoding before Next.js
 * sees it (Next.js decodes dynamic segments before any route or proxy of ours
 * runs, and answers a malformed one with a plain-text 500). `next start` creates
 * its server itself and gives no hook before routing, so this goes on
 * http.Server's "request" event: a few lines of work per request, in the
 * process that owns the socket (installed at boot).
 */
export function stampPeerAddresses(): void {
  if (installed) return;
  installed = true;
  const emit = http.Server.prototype.emit as (this: http.Server, event: string | symbol, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: unknown[]) {
    if (event === "request") {
      const request = args[0] as http.IncomingMessage;
      request.headers[PEER_HEADER] = request.socket.remoteAddress ?? "";
      if (!isDecodablePath(request.url ?? "/")) {
        void answerInvalidPath(request, args[1] as http.ServerResponse);
        return true;
      }
    }
    return emit.call(this, event, ...args);
  } as typeof http.Server.prototype.emit;
}

/** Every segment of the path (not the query) decodes as UTF-8 percent-encoding. */
export function isDecodablePath(url: string): boolean {
  const path = url.split(/[?#]/, 1)[0] ?? "";
  if (!path.includes("%")) return true;
  try {
    for (const segment of path.split("/")) decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

/** 400 `invalid_path` in the API's error format, with the headers every answer gets. */
async function answerInvalidPath(incoming: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (typeof value === "string") headers.set(name, value);
  }
  const request = new Request(`http://${headers.get("host") ?? "localhost"}/`, { headers });
  const response = await presentError(request, errorResponse("invalid_path"));
  for (const [name, value] of EVERY_ANSWER_HEADERS) response.headers.set(name, value);
  response.headers.set("Content-Security-Policy", API_CSP);
  if (cameOverHttps(headers)) response.headers.set("Strict-Transport-Security", HSTS);
  const body = Buffer.from(await response.arrayBuffer());
  response.headers.set("Content-Length", String(body.length));
  res.writeHead(response.status, Object.fromEntries(response.headers));
  // The body of a request with a malformed path is not read: the connection closes after the answer.
  res.shouldKeepAlive = false;
  res.end(body);
}
