import http from "node:http";
import https from "node:https";
import { safeLookup } from "./addresses";

/** What one POST came to: the status (null: no answer), how long it took, the answer's first bytes or the error. */
export type PostResult = { status: number | null; durationMs: number; body: string | null; error: string | null };

/** How much of an answer is kept with its attempt. */
export const ANSWER_BYTES = 1024;

/**
 * Connections kept open per endpoint origin between its deliveries (a new TCP connection per event costs both ends
 * more than the event). Each new socket's address is still checked where it connects (safeLookup); node drops an
 * idle socket by the endpoint's Keep-Alive hint, and one destroyed mid-answer is never reused.
 */
const agents = new Map<string, http.Agent>();
function agentFor(target: URL): http.Agent {
  let agent = agents.get(target.origin);
  if (!agent) {
    agent = new (target.protocol === "https:" ? https.Agent : http.Agent)({ keepAlive: true, keepAliveMsecs: 1_000 });
    agents.set(target.origin, agent);
  }
  return agent;
}

/**
 * One POST of a delivery, with node's own http client: a timeout for the whole attempt, no redirect followed (a
 * 3xx is a failure: a redirect could send the event, signed, somewhere else), the address checked where the
 * socket connects (addresses.ts), and no more of the answer read than is kept.
 */
export function postOnce(url: string, body: string, headers: Record<string, string>, timeoutMs: number) {
  const started = performance.now();
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const finish = (result: Omit<PostResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, durationMs: Math.round(performance.now() - started) });
    };
    const target = new URL(url);
    const client = target.protocol === "https:" ? https : http;
    const request = client.request(
      target,
      {
        method: "POST",
        lookup: safeLookup as never,
        agent: agentFor(target),
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "user-agent": "Charges-Webhooks/1",
          ...headers,
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        response.on("data", (chunk: Buffer) => {
          if (kept < ANSWER_BYTES) chunks.push(chunk.subarray(0, ANSWER_BYTES - kept));
          kept += chunk.length;
          if (kept >= ANSWER_BYTES) response.destroy(); // enough of it: the rest is not read
        });
        const done = () =>
          finish({
            status: response.statusCode ?? null,
            body: Buffer.concat(chunks).toString("utf8"),
            error: null,
          });
        response.on("end", done);
        response.on("close", done);
        response.on("error", done);
      },
    );
    const timer = setTimeout(() => {
      request.destroy();
      finish({ status: null, body: null, error: `timed out after ${timeoutMs} ms` });
    }, timeoutMs);
    request.on("error", (error: NodeJS.ErrnoException) =>
      finish({ status: null, body: null, error: `${error.code ?? "error"}: ${error.message}`.slice(0, 255) }),
    );
    request.end(body);
  });
}
