import { env } from "~/env";
import { submitCharge, type ChargeOutcome } from "~/server/charges/submitCharge";
import { authenticateApiClient } from "~/server/auth/apiClients";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { handleApi, methodNotAllowed } from "~/server/http/handleApi";
import { REPLAY_HEADERS } from "~/server/http/idempotencyProtocol";
import { readJsonBody } from "~/server/http/readJsonBody";
import { IDEMPOTENCY_KEY_HEADER } from "~/server/idempotency/idempotencyKeyHeader";

export const dynamic = "force-dynamic";

// Statuses, Retry-After and Link come from the error registry (src/server/http/errorRegistry.ts).
function toResponse(outcome: ChargeOutcome): Response {
  switch (outcome.kind) {
    case "response":
      return jsonResponse(outcome.response.status, outcome.response.body, outcome.replayed ? REPLAY_HEADERS : {});
    case "invalid_request":
      return errorResponse("invalid_request", { details: { fields: outcome.fields } });
    case "invalid_idempotency_key":
      return errorResponse("invalid_idempotency_key", { message: outcome.message });
    case "idempotency_key_required":
      return errorResponse("idempotency_key_required", { message: `This endpoint requires an ${IDEMPOTENCY_KEY_HEADER} header.` });
    case "in_progress":
      return errorResponse("request_in_progress");
    case "key_reused":
      return errorResponse("idempotency_key_reused");
    case "client_gone":
      // Nobody reads this; the status (nginx's "client closed request") is for logs.
      return errorResponse("client_closed_request");
    case "gateway_unavailable":
      return errorResponse("gateway_unavailable");
  }
}

export async function POST(request: Request) {
  return handleApi(request, async () => {
    const client = await authenticateApiClient(request.headers.get("authorization"));
    if (!client) return errorResponse("unauthorized");
    const body = await readJsonBody(request, env.MAX_BODY_BYTES);
    const outcome = await submitCharge({
      apiClientId: client.id,
      body,
      idempotencyKeyHeader: request.headers.get(IDEMPOTENCY_KEY_HEADER),
      signal: request.signal,
    });
    return toResponse(outcome);
  });
}

export const GET = methodNotAllowed("POST");
export const PUT = methodNotAllowed("POST");
export const PATCH = methodNotAllowed("POST");
export const DELETE = methodNotAllowed("POST");
