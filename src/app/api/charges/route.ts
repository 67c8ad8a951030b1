import { env } from "~/env";
import { submitCharge, type ChargeOutcome } from "~/server/charges/submitCharge";
import { authenticateApiClient } from "~/server/auth/apiClients";
import { errorResponse, jsonResponse, methodNotAllowed } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";
import { readJsonBody } from "~/server/http/readJsonBody";
import { IDEMPOTENCY_KEY_HEADER } from "~/server/idempotency/idempotencyKeyHeader";

export const dynamic = "force-dynamic";

const RETRY_AFTER_SECONDS = "2";

function toResponse(outcome: ChargeOutcome): Response {
  switch (outcome.kind) {
    case "response":
      return jsonResponse(outcome.response.status, outcome.response.body, outcome.replayed ? { "Idempotent-Replay": "true" } : {});
    case "invalid_request":
      return errorResponse(400, "invalid_request", "The request body is invalid.", { details: { fields: outcome.fields } });
    case "invalid_idempotency_key":
      return errorResponse(400, "invalid_idempotency_key", outcome.message);
    case "idempotency_key_required":
      return errorResponse(400, "idempotency_key_required", `This endpoint requires an ${IDEMPOTENCY_KEY_HEADER} header.`);
    case "in_progress":
      return errorResponse(409, "request_in_progress", "A request with this Idempotency-Key is still being processed; retry later.", {
        headers: { "Retry-After": RETRY_AFTER_SECONDS },
      });
    case "key_reused":
      return errorResponse(422, "idempotency_key_reused", "This Idempotency-Key was already used with a different request.");
    case "client_gone":
      // Nobody reads this; the status (nginx's "client closed request") is for logs.
      return errorResponse(499, "client_closed_request", "The client closed the connection before the request was processed.");
    case "gateway_unavailable":
      return errorResponse(503, "gateway_unavailable", "The payment gateway did not answer; retry with the same Idempotency-Key.", {
        headers: { "Retry-After": RETRY_AFTER_SECONDS },
      });
  }
}

export async function POST(request: Request) {
  return handleApi(async () => {
    const client = await authenticateApiClient(request.headers.get("authorization"));
    if (!client) return errorResponse(401, "unauthorized", "Send a valid API key as `Authorization: Bearer <key>`.");
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
