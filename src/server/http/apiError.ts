/**
 * The one error format of the public API, Stripe-style:
 *   {"error": {"code": "...", "message": "...", ...details}}
 * Every non-2xx response body is built here.
 */
export type ApiErrorCode =
  | "unauthorized"
  | "invalid_request"
  | "invalid_json"
  | "body_too_large"
  | "unsupported_media_type"
  | "invalid_idempotency_key"
  | "idempotency_key_required"
  | "idempotency_key_reused"
  | "request_in_progress"
  | "card_declined"
  | "request_abandoned"
  | "gateway_unavailable"
  | "client_closed_request"
  | "service_unavailable"
  | "not_found"
  | "invalid_credentials"
  | "too_many_attempts"
  | "cross_site_request"
  | "method_not_allowed"
  | "internal_error";

export type ErrorDetails = Record<string, unknown>;

export function errorBody(code: ApiErrorCode, message: string, details: ErrorDetails = {}): string {
  return JSON.stringify({ error: { code, message, ...details } });
}

export function jsonResponse(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", ...headers },
  });
}

export function errorResponse(
  status: number,
  code: ApiErrorCode,
  message: string,
  { details, headers }: { details?: ErrorDetails; headers?: Record<string, string> } = {},
): Response {
  return jsonResponse(status, errorBody(code, message, details), headers);
}

/** A failure that already knows its HTTP shape; route handlers turn it into a response. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  toResponse(): Response {
    return errorResponse(this.status, this.code, this.message, { details: this.details, headers: this.headers });
  }
}

/** A handler for the methods a route does not serve, e.g. `export const PUT = methodNotAllowed("POST")`. */
export function methodNotAllowed(allowed: string) {
  return (request: Request) =>
    errorResponse(405, "method_not_allowed", `${request.method} is not supported here; use ${allowed}.`, {
      headers: { Allow: allowed },
    });
}
