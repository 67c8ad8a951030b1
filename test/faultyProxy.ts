import { createServer, type IncomingHttpHeaders, type IncomingMessage, request as httpRequest } from "node:http";

/** One answer the proxy gives itself instead of the app's (a load balancer's 502, a gateway timeout's 504...). */
export type CannedAnswer = {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Sends `Retry-After` as an HTTP date this long after the answer (rounded up to the next whole second). */
  retryAfterDateMs?: number;
  /** Passes the request to the app first and throws its answer away: the app did the work, the client never knew. */
  afterForwarding?: boolean;
};

/** What reached the proxy, in order. */
export type ProxiedRequest = {
  at: number;
  idempotencyKey: string | undefined;
  /** The canned status, or "app" when the app's own answer was passed on. */
  answered: number | "app";
  /** When the canned `Retry-After` date said to come back (ms since the epoch). */
  retryAfterUntil?: number;
};

// Hop-by-hop fields and the ones the body's new framing sets again.
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "upgrade"]);
const endToEnd = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).filter(([name, value]) => value !== undefined && !HOP_BY_HOP.has(name)));

/**
 * An HTTP proxy on loopback in front of the app: it answers the first requests itself, as `script` says, then
 * passes every request on to `upstream` and its answer back. What an SDK meets behind a load balancer.
 */
export async function faultyProxy(upstream: string, script: CannedAnswer[]) {
  const target = new URL(upstream);
  const requests: ProxiedRequest[] = [];

  const forward = (req: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const headers = endToEnd(req.headers);
      const options = { host: target.hostname, port: target.port, method: req.method, path: req.url, headers };
      const out = httpRequest(options, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      });
      out.on("error", reject);
      out.end(body);
    });

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const canned = script[requests.length];
    const key = req.headers["idempotency-key"];
    const idempotencyKey = Array.isArray(key) ? key.join(", ") : key;
    const seen: ProxiedRequest = { at: Date.now(), idempotencyKey, answered: "app" };
    requests.push(seen);
    try {
      if (canned?.afterForwarding) await forward(req, body);
      if (canned) {
        const headers = { ...canned.headers };
        if (canned.retryAfterDateMs !== undefined) {
          seen.retryAfterUntil = Math.ceil((Date.now() + canned.retryAfterDateMs) / 1000) * 1000;
          headers["Retry-After"] = new Date(seen.retryAfterUntil).toUTCString();
        }
        seen.answered = canned.status;
        res.writeHead(canned.status, headers).end(canned.body ?? "");
        return;
      }
      const answer = await forward(req, body);
      res.writeHead(answer.status, endToEnd(answer.headers)).end(answer.body);
    } catch (error) {
      res.writeHead(599, { "Content-Type": "text/plain" }).end(`proxy: ${String(error)}`);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
