import { env } from "~/env";
import { chargeBehindPeer } from "~/server/charges/benchmarkPeers";
import { findChargeOperation, submitCharge, type ChargeOutcome } from "~/server/charges/submitCharge";
import { authenticateApiClient } from "~/server/auth/apiClients";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { handleApi, methodNotAllowed } from "~/server/http/handleApi";
import { keyProblem, REPLAY_HEADERS } from "~/server/http/idempotencyProtocol";
import { preferenceApplied, preferredWaitSeconds } from "~/server/http/prefer";
import { readJsonBody } from "~/server/http/readJsonBody";
import { IDEMPOTENCY_KEY_HEADER } from "~/server/idempotency/idempotencyKeyHeader";
import { addLogContext } from "~/server/observability/context";
import { metrics } from "~/server/observability/metrics";

export const dynamic = "force-dynamic";

const ageSeconds = (since: Date | null) =>
  since ? Math.max(0, Math.round((Date.now() - since.getTime()) / 1000)) : undefined;

// Statuses, Retry-After and Link come from the error registry (src/server/http/errorRegistry.ts).
function toResponse(outcome: ChargeOutcome, waitSeconds: number): Response {
  const applied = "waited" in outcome && outcome.waited ? preferenceApplied(waitSeconds) : {};
  switch (outcome.kind) {
    case "response":
      return jsonResponse(outcome.response.status, outcome.response.body, {
        ...(outcome.replayed ? REPLAY_HEADERS : {}),
        ...applied,
      });
    case "invalid_request":
      return errorResponse("invalid_request", { details: { fields: outcome.fields } });
    case "invalid_idempotency_key":
      return errorResponse("invalid_idempotency_key", { message: outcome.message });
    case "idempotency_key_required":
      return errorResponse("idempotency_key_required");
    case "in_progress":
      return errorResponse("request_in_progress", {
        details: { age_seconds: ageSeconds(outcome.since) },
        headers: applied,
      });
    case "key_reused":
      return errorResponse("idempotency_key_reused");
    case "client_gone":
      // Nobody reads this; the status (nginx's "client closed request") is for logs.
      return errorResponse("client_closed_request");
    case "gateway_unavailable":
      return errorResponse("gateway_unavailable");
    case "charge_outcome_unknown":
      return errorResponse("charge_outcome_unknown", { details: { request_id: String(outcome.requestId) } });
  }
}

export async function POST(request: Request) {
  if (env.BENCHMARK_PEER) return chargeBehindPeer(request, env.BENCHMARK_PEER); // bench/peers.ts only
  let outcome: ChargeOutcome | undefined;
  const response = await handleApi(request, async () => {
    const client = await authenticateApiClient(request.headers.get("authorization"));
    if (!client) return errorResponse("unauthorized");
    addLogContext({ apiClientId: client.id });
    const body = await readJsonBody(request, env.MAX_BODY_BYTES);
    const waitSeconds = preferredWaitSeconds(request.headers.get("prefer"));
    outcome = await submitCharge({
      apiClientId: client.id,
      body,
      idempotencyKeyHeader: request.headers.get(IDEMPOTENCY_KEY_HEADER),
      signal: request.signal,
      waitSeconds,
    });
    return toResponse(outcome, waitSeconds);
  });
  metrics.answers.inc({ outcome: outcomeLabel(outcome, response.status), status: String(response.status) });
  return response;
}

/** The answer's outcome as /api/metrics counts it; without an outcome the request failed before or around it. */
function outcomeLabel(outcome: ChargeOutcome | undefined, status: number): string {
  if (outcome?.kind === "response") return outcome.replayed ? "replay" : "fresh";
  if (outcome) return outcome.kind;
  if (status === 503) return "service_unavailable";
  if (status === 401) return "unauthorized";
  return status >= 500 ? "internal_error" : "invalid_request";
}

/** ?idempotency_key=K, or ?request_id=N (what a keyless request whose outcome was unknown was given). */
function operationHandle(
  query: URLSearchParams,
): { idempotencyKey: string } | { requestId: bigint } | { problem: string } {
  const requestId = query.get("request_id");
  if (requestId !== null) {
    return /^\d{1,19}$/.test(requestId) ? { requestId: BigInt(requestId) } : { problem: "request_id must be a number" };
  }
  const key = query.get("idempotency_key");
  if (key === null) return { problem: "Send the operation's key as ?idempotency_key=... (or ?request_id=...)" };
  const problem = keyProblem(key);
  return problem ? { problem } : { idempotencyKey: key };
}

/**
 * GET /api/charges?idempotency_key=K: settles what happened to an operation
 * without resending it (a client whose deadline ran out, say). Complete: the
 * stored answer, exactly as a replay gives it; in flight: 409 with its age;
 * anything else, another client's key included: 404.
 */
export async function GET(request: Request) {
  return handleApi(request, async () => {
    const client = await authenticateApiClient(request.headers.get("authorization"));
    if (!client) return errorResponse("unauthorized");
    const handle = operationHandle(new URL(request.url).searchParams);
    if ("problem" in handle) return errorResponse("invalid_idempotency_key", { message: handle.problem });
    const operation = await findChargeOperation(client.id, handle);
    switch (operation.kind) {
      case "complete":
        return jsonResponse(operation.response.status, operation.response.body, REPLAY_HEADERS);
      case "in_progress":
        return errorResponse("request_in_progress", { details: { age_seconds: ageSeconds(operation.since) } });
      case "unknown":
        return errorResponse("not_found", { message: "No operation with this Idempotency-Key." });
    }
  });
}

export const PUT = methodNotAllowed("GET, POST");
export const PATCH = methodNotAllowed("GET, POST");
export const DELETE = methodNotAllowed("GET, POST");
