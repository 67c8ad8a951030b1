import { parseRecordId } from "~/lib/recordId";
import { env } from "~/env";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { methodNotAllowed } from "~/server/http/handleApi";
import { IDEMPOTENCY_KEY_HEADER, REPLAY_HEADERS } from "@charges/client/idempotencyProtocol";
import { preferenceApplied, preferredWaitSeconds } from "~/server/http/prefer";
import { readJsonBody } from "~/server/http/readJsonBody";
import { withApiClient } from "~/server/auth/withApiClient";
import { noteAnswered, type OperationState } from "~/server/idempotency";
import { parseIdempotencyKey, parseIdempotencyKeyHeader } from "~/server/http/idempotencyKeyHeader";
import { currentLogContext } from "~/server/observability/context";
import { metrics } from "~/server/observability/metrics";
import type { MoneyOperation } from "./moneyOperation";
import { outcomeLabel, type OperationOutcome } from "./outcome";
import { findOperationOf, submitOperation } from "./submitOperation";

/** When the key of an answer stops naming its operation (an HTTP-date); documented in the README and OpenAPI. */
const KEY_EXPIRES_HEADER = "Idempotency-Key-Expires";

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
export function moneyRoute<Input>(
  operation: MoneyOperation<Input>,
  /** GET without ?idempotency_key= or ?request_id=: the client's list of the operation's objects (src/server/lists). */
  list?: (apiClientId: number, query: URLSearchParams) => Promise<string>,
) {
  // The outcomes every dashboard expects, at 0 until they happen.
  for (const [outcome, status] of EXPECTED_ANSWERS) metrics.answers.labels(operation.route, outcome, status).inc(0);

  async function post(request: Request) {
    const startedAt = performance.now();
    let outcome: OperationOutcome | undefined;
    const answered = (response: Response) => {
      const label = outcome ? outcomeLabel(outcome) : failureLabel(response.status);
      metrics.answers.inc({ route: operation.route, outcome: label, status: String(response.status) });
      noteAnswer(request, response, { route: operation.route, label, startedAt });
    };
    return withApiClient(
      request,
      async (client) => {
        const body = await readJsonBody(request, env.MAX_BODY_BYTES);
        const waitSeconds = preferredWaitSeconds(request.headers.get("prefer"));
        outcome = await submitOperation(operation, {
          apiClientId: client.id,
          body,
          idempotencyKeyHeader: request.headers.get(IDEMPOTENCY_KEY_HEADER),
          signal: request.signal,
          waitSeconds,
        });
        return toResponse(outcome, waitSeconds, operation, request.headers.get(IDEMPOTENCY_KEY_HEADER));
      },
      answered,
    );
  }

  /**
   * GET ?idempotency_key=K: what happened to an operation (a client whose deadline ran out, say). Complete: the
   * stored answer, exactly as a replay gives it; in flight: 409 with its age; anything else, another client's key
   * included: 404.
   */
  async function get(request: Request) {
    return withApiClient(request, async (client) => {
      const query = new URL(request.url).searchParams;
      if (list && !query.has("idempotency_key") && !query.has("request_id"))
        return jsonResponse(200, await list(client.id, query));
      const handle = operationHandle(query);
      if ("problem" in handle) return errorResponse("invalid_idempotency_key", { message: handle.problem });
      return stateResponse(await findOperationOf(operation, client.id, handle));
    });
  }

  const others = methodNotAllowed("GET, POST");
  return { GET: get, POST: post, PUT: others, PATCH: others, DELETE: others };
}

/**
 * The answer's headers beyond the body: when its key expires (every keyed answer), Location for a 201, and for a
 * replay the markers, the Request-Id of the request it replays, and the key it answered.
 */
function answerHeaders(
  outcome: OperationOutcome & { kind: "response" | "in_progress" },
  operation: { route: string },
  keyHeader: string | null,
) {
  const headers: Record<string, string> = {};
  if (outcome.expiresAt) headers[KEY_EXPIRES_HEADER] = outcome.expiresAt.toUTCString();
  if (outcome.kind !== "response") return headers;
  const { status, body, requestId } = outcome.response;
  if (status === 201) {
    const id = (JSON.parse(body) as { id?: unknown }).id;
    if (typeof id === "string") headers.Location = `${operation.route.replace(/^POST /, "")}/${id}`;
  }
  if (outcome.replayed) {
    Object.assign(headers, REPLAY_HEADERS);
    if (requestId) headers["Original-Request"] = requestId;
    if (keyHeader !== null) headers[IDEMPOTENCY_KEY_HEADER] = keyHeader.trim();
  }
  return headers;
}

// Statuses, Retry-After and Link come from the error registry (packages/client/src/errorRegistry.ts).
function toResponse(
  outcome: OperationOutcome,
  waitSeconds: number,
  operation: { route: string },
  keyHeader: string | null,
): Response {
  const applied = outcome.kind !== "error" && outcome.waited ? preferenceApplied(waitSeconds) : {};
  switch (outcome.kind) {
    case "response":
      return jsonResponse(outcome.response.status, outcome.response.body, {
        ...answerHeaders(outcome, operation, keyHeader),
        ...applied,
      });
    case "in_progress":
      return errorResponse("request_in_progress", {
        details: { age_seconds: ageSeconds(outcome.since) },
        headers: { ...answerHeaders(outcome, operation, keyHeader), ...applied },
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
    case "unfinished":
      return errorResponse("request_in_progress", { details: { age_seconds: ageSeconds(operation.since) } });
    case "unknown":
      return errorResponse("not_found", { message: "No operation with this Idempotency-Key." });
  }
}

/** The attempt's answer on its key's timeline (events.ts), after the response is made. */
function noteAnswer(
  request: Request,
  response: Response,
  { route, label, startedAt }: { route: string; label: string; startedAt: number },
) {
  const context = currentLogContext();
  const key = parseIdempotencyKeyHeader(request.headers.get(IDEMPOTENCY_KEY_HEADER));
  if (context?.apiClientId === undefined || key.kind === "invalid") return; // no client, or no key to file it under
  noteAnswered(
    {
      idempotencyKey: key.kind === "valid" ? key.key : null,
      route,
      apiClientId: context.apiClientId,
      recordId: context.recordId ? BigInt(context.recordId) : null,
    },
    {
      status: response.status,
      code: label,
      latencyMs: performance.now() - startedAt,
      clientGone: request.signal.aborted,
    },
  );
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
    const id = parseRecordId(requestId);
    return id === null ? { problem: "request_id must be a number" } : { requestId: id };
  }
  const value = query.get("idempotency_key");
  if (value === null) return { problem: "Send the operation's key as ?idempotency_key=... (or ?request_id=...)" };
  // The header's parser: the query names the key the header named, in either form, and refuses what it refuses.
  const key = parseIdempotencyKey(value);
  return key.kind === "valid" ? { idempotencyKey: key.key } : { problem: key.reason };
}
