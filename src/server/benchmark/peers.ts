/**
 * BENCHMARKS ONLY (BENCHMARK_PEER, refused outside a benchmark's own database;
 * bench/peers.ts): POST /api/charges behind @node-idempotency/core, with its
 * Redis or in-memory storage, instead of this project's layer, so that the two
 * can be measured on the same route, build, gateway and charge insert.
 *
 * The adaptation is the package's own Express plugin (@node-idempotency/express,
 * middleware.ts) written out for a route handler, and no more: onRequest with
 * the request's headers, parsed body, path and method; a stored answer is
 * replayed with its status and Idempotent-Replayed: true (and this app's
 * Idempotent-Replay, which the SDK reads); its errors get the
 * plugin's statuses (409 with Retry-After: 1, 422, 400), in this app's error
 * format so that the same SDK can read them. Otherwise the work runs (the body
 * validated, then exactly what the layer-off baseline does: the gateway charge
 * under a fresh gateway key, the charge insert), and whatever the route answers,
 * errors included, is handed to onResponse without awaiting it, as the plugin's
 * patched res.send does; its JSON body parsed as the plugin parses it. The
 * packages are loaded on first use only, so the normal app never touches them.
 */
import type { Idempotency, IdempotencyParams, IdempotencyResponse } from "@node-idempotency/core";
import { env } from "~/env";
import { authenticateApiClient } from "~/server/auth/apiClients";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";
import { REPLAY_HEADERS } from "@charges/client/idempotencyProtocol";
import { readJsonBody } from "~/server/http/readJsonBody";
import { log } from "~/server/observability/log";
import { chargeWithoutLayer } from "./withoutIdempotency";

type Peer = NonNullable<typeof env.BENCHMARK_PEER>;

let instance: Promise<Idempotency> | undefined;

/** One instance per process, as the plugin makes one per app: its memory storage lives as long as the process. */
async function peerIdempotency(peer: Peer): Promise<Idempotency> {
  const { Idempotency } = await import("@node-idempotency/core");
  if (peer === "node-idempotency-memory") {
    const { MemoryStorageAdapter } = await import("@node-idempotency/storage-adapter-memory");
    return new Idempotency(new MemoryStorageAdapter());
  }
  const { RedisStorageAdapter } = await import("@node-idempotency/storage-adapter-redis");
  const storage = new RedisStorageAdapter({ url: env.BENCHMARK_PEER_REDIS_URL });
  await storage.connect();
  return new Idempotency(storage);
}

/** The plugin's statuses for the package's errors (@node-idempotency/shared, http.ts), as this app words them. */
async function peerErrorResponse(error: unknown): Promise<Response> {
  const { IdempotencyError, IdempotencyErrorCodes: codes } = await import("@node-idempotency/core");
  if (!(error instanceof IdempotencyError)) throw error;
  switch (error.code) {
    case codes.REQUEST_IN_PROGRESS:
      return errorResponse("request_in_progress", { headers: { "Retry-After": "1" } });
    case codes.IDEMPOTENCY_FINGERPRINT_MISSMATCH:
      return errorResponse("idempotency_key_reused");
    default:
      return errorResponse("invalid_idempotency_key", { message: error.message });
  }
}

/** A stored answer, as the plugin replays it. */
function replay(stored: IdempotencyResponse): Response {
  const status = Number(stored.additional?.statusCode ?? 200);
  // The plugin's Idempotent-Replayed and this app's Idempotent-Replay (REPLAY_HEADERS): the SDK reads the latter, and
  // a replayed error must end its retries under a peer as under this layer.
  return jsonResponse(status, JSON.stringify(stored.body ?? stored.error ?? null), REPLAY_HEADERS);
}

export async function chargeBehindPeer(request: Request, peer: Peer): Promise<Response> {
  return handleApi(request, async () => {
    const client = await authenticateApiClient(request.headers.get("authorization"));
    if (!client) return errorResponse("unauthorized");
    const body = (await readJsonBody(request, env.MAX_BODY_BYTES)) as Record<string, unknown>;
    const url = new URL(request.url);
    const params: IdempotencyParams = {
      headers: Object.fromEntries(request.headers),
      body,
      path: url.pathname + url.search,
      method: request.method,
    };
    instance ??= peerIdempotency(peer);
    const idempotency = await instance;
    let stored: IdempotencyResponse | undefined;
    try {
      stored = await idempotency.onRequest(params);
    } catch (error) {
      return peerErrorResponse(error);
    }
    if (stored) return replay(stored);
    // The plugin stores whatever is sent, an error page included: handleApi makes every failure an answer here.
    let sent: { status: number; body: string } | undefined;
    const response = await handleApi(request, async () => {
      sent = await chargeWithoutLayer(client.id, body);
      return jsonResponse(sent.status, sent.body);
    });
    const payload: unknown = JSON.parse(sent?.body ?? (await response.clone().text()));
    const statusCode = response.status;
    const answer = statusCode < 400 ? { body: payload } : { error: payload };
    idempotency
      .onResponse(params, { additional: { statusCode }, ...answer })
      .catch((error: unknown) => log.error({ err: error }, "benchmark peer: storing the answer failed"));
    return response;
  });
}
