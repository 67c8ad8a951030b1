import { API_ERRORS, type ApiErrorCode } from "@charges/client/errorRegistry";

export type { ApiErrorCode };

/**
 * The one error format of the public API, Stripe-style:
 *   {"error": {"code": "...", "message": "...", ...details}}
 * Every error body is built here, including the ones stored with an operation
 * and replayed. What depends on the request (doc_url, Link, Retry-After, the
 * RFC 9457 form) is added when it is answered: see presentError.ts.
 */
export type ErrorDetails = Record<string, unknown>;

export function errorBody(
  code: ApiErrorCode,
  message: string = API_ERRORS[code].message,
  details: ErrorDetails = {},
): string {
  return JSON.stringify({ error: { code, message, ...details } });
}

export function jsonResponse(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", ...headers },
  });
}

/** An answer with this code: its status comes from the registry. */
export function errorResponse(
  code: ApiErrorCode,
  { message, details, headers }: { message?: string; details?: ErrorDetails; headers?: Record<string, string> } = {},
): Response {
  return jsonResponse(API_ERRORS[code].status, errorBody(code, message, details), headers);
}

/** A failure that already knows its answer; handleApi turns it into a response. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string = API_ERRORS[code].message,
    readonly details?: ErrorDetails,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  toResponse(): Response {
    return errorResponse(this.code, { message: this.message, details: this.details, headers: this.headers });
  }
}
