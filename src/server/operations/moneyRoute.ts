import { env } from "~/env";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { methodNotAllowed } from "~/server/http/handleApi";
import { IDEMPOTENCY_KEY_HEADER, keyProblem, REPLAY_HEADERS } from "~/server/http/idempotencyProtocol";
import { preferenceApplied, preferredWaitSeconds } from "~/server/http/prefer";
import { readJsonBody } from "~/server/http/readJsonBody";
import { withApiClient } from "~/server/http/withApiClient";
import type { OperationState } from "~/server/idempotency";
import { metrics } from "~/server/observability/metrics";
import type { MoneyOperation } from "./moneyOperation";
import { outcomeLabel, type OperationOutcome } from "./outcome";
import { findOperationOf, submitOperation } from "./submitOperation";

const EXPECTED_ANSWERS = [
  ["fresh", "201"],
  ["replay", "201"],
  ["in_progress", "409"],
  ["idempotency_key_reused", "422"],
  ["invalid_request", "400"],
  ["service_unavailable", "503"],
] as const;

const ageSeconds = (since: Date | null) =>
  since ? Math.max(0, Math.round((Date.now() - since.getTime()) / 1000)) : undefined;

/**
 * The route file of a money route: `export const { GET, POST, PUT, PATCH, DELETE } = moneyRoute(operation)`.
 * POST runs the operation under the idempotency protocol; GET settles what happened to one without resending it.
 */
export function moneyRoute<Input>(operation: MoneyOperation<Input>) {
  // The outcomes every dashboard expects, at 0 until they happen.
  for (const [outcome, status] of EXPECTED_ANSWERS) metrics.answers.labels(operation.route, outcome, status).inc(0);

  async function post(request: Request) {
    let outcome: OperationOutcome | undefined;
    const response = await withApiClient(request, async (client) => {
      const body = await readJsonBody(request, env.MAX_BODY_BYTES);
      const waitSeconds = preferredWaitSeconds(request.headers.get("prefer"));
      outcome = await submitOperation(operation, {
        apiClientId: client.id,
        body,
        idempotencyKeyHeader: request.headers.get(IDEMPOTENCY_KEY_HEADER),
        signal: request.signal,
        waitSeconds,
      });
      return toResponse(outcome, waitSeconds);
    });
    const label = outcome ? outcomeLabel(outcome) : failureLabel(response.status);
    metrics.answers.inc({ route: operation.route, outcome: label, status: String(response.status) });
    return response;
  }

  /**
   * GET ?idempotency_key=K: what happened to an operation (a client whose deadline ran out, say). Complete: the
   * stored answer, exactly as a replay gives it; in flight: 409 with its age; anything else, another client's key
   * included: 404.
   */
  async function get(request: Request) {
    return withApiClient(request, async (client) => {
      const handle = operationHandle(new URL(request.url).searchParams);
      if ("problem" in handle) return errorResponse("invalid_idempotency_key", { message: handle.problem });
      return stateResponse(await findOperationOf(operation as MoneyOperation<unknown>, client.id, handle));
    });
  }

  const others = methodNotAllowed("GET, POST");
  return { GET: get, POST: post, PUT: others, PATCH: others, DELETE: others };
}

// Statuses, Retry-After and Link come from the error registry (src/server/http/errorRegistry.ts).
function toResponse(outcome: OperationOutcome, waitSeconds: number): Response {
  const applied = outcome.kind !== "error" && outcome.waited ? preferenceApplied(waitSeconds) : {};
  switch (outcome.kind) {
    case "response":
      return jsonResponse(outcome.response.status, outcome.response.body, {
        ...(outcome.replayed ? REPLAY_HEADERS : {}),
        ...applied,
      });
    case "in_progress":
      return errorResponse("request_in_progress", {
        details: { age_seconds: ageSeconds(outcome.since) },
        headers: applied,
      });
    case "error":
      return errorResponse(outcome.code, { message: outcome.message, details: outcome.details });
  }
}

function stateResponse(operation: OperationState): Response {
  switch (operation.kind) {
    case "complete":
      return jsonResponse(operation.response.status, operation.response.body, REPLAY_HEADERS);
    case "in_progress":
      return errorResponse("request_in_progress", { details: { age_seconds: ageSeconds(operation.since) } });
    case "unknown":
      return errorResponse("not_found", { message: "No operation with this Idempotency-Key." });
  }
}

/** Without an outcome the request failed before or around it. */
function failureLabel(status: number): string {
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
