/**
 * Every error code of the public API, in ONE list. From it:
 * - the route handlers take each answer's status, Retry-After and Link (src/server/http/presentError.ts),
 * - the OpenAPI document and the /docs page describe every code and what a client should do,
 * - the SDK (this package) decides which answers to retry.
 *
 * It lives in the SDK's package, which the server imports it from (`@charges/client/errorRegistry`): the package
 * ships alone, so this file imports nothing, and runs in browsers too.
 */

/** What a client should do about an answer. */
export type ClientAction =
  /** Ask again later with the SAME key and body: the outcome is not decided yet, or could not be told. */
  | "retry"
  /** Change the request (or the credentials) first; resending it unchanged gets the same answer. */
  | "fix"
  /** Final: this operation is over. Anything else is a new operation with a new key. */
  | "final";

export type ErrorSpec = {
  status: number;
  /** A short, constant summary (the `title` of an RFC 9457 problem). */
  title: string;
  /** The default `message`; an answer may carry a more specific one. */
  message: string;
  action: ClientAction;
  /** What a client should do, for the documentation. */
  advice: string;
  /** Sent as `Retry-After` (seconds) with every answer of this code. */
  retryAfterSeconds?: number;
  /**
   * An error about the use of Idempotency-Key: answered with
   * `Link: <doc>; rel="describedby"`, as the draft suggests.
   */
  idempotency?: boolean;
  /** Stored with the operation and replayed (with Idempotent-Replay: true) to every retry. */
  stored?: boolean;
};

const RETRY_AFTER_SECONDS = 2;

export const API_ERRORS = {
  invalid_request: {
    status: 400,
    title: "Invalid request",
    message: "The request body is invalid.",
    action: "fix",
    advice: "Fix the fields named in `error.fields`. Nothing was stored, so the corrected request may reuse the key.",
  },
  invalid_json: {
    status: 400,
    title: "Malformed JSON",
    message: "The request body is not valid JSON.",
    action: "fix",
    advice: "Send one UTF-8 JSON object. Nothing was stored.",
  },
  invalid_path: {
    status: 400,
    title: "Invalid path",
    message: "The path is not valid percent-encoding.",
    action: "fix",
    advice: "Percent-encode the path as UTF-8 (`%` followed by two hex digits). Nothing was stored.",
  },
  invalid_idempotency_key: {
    status: 400,
    title: "Invalid Idempotency-Key",
    message: "The Idempotency-Key header is invalid.",
    action: "fix",
    advice:
      "Send exactly one Idempotency-Key field: 1 to 64 printable ASCII characters, bare or as a structured-field " +
      'string (`"..."`). Two field lines, a list or an unbalanced quote are refused, never taken as a key. ' +
      "Use a UUIDv4 generated once per operation.",
    idempotency: true,
  },
  idempotency_key_required: {
    status: 400,
    title: "Idempotency-Key is missing",
    message: "This endpoint requires an Idempotency-Key header.",
    action: "fix",
    advice: "Generate a UUIDv4 for the operation, send it as Idempotency-Key, and reuse it on every retry.",
    idempotency: true,
  },
  unauthorized: {
    status: 401,
    title: "Unauthorized",
    message: "Send a valid API key as `Authorization: Bearer <key>`.",
    action: "fix",
    advice: "Check the API key. Nothing was stored; the same key and body may be sent again with valid credentials.",
  },
  card_declined: {
    status: 402,
    title: "Card declined",
    message: "The card was declined.",
    action: "final",
    advice:
      "Final, and replayed to every retry with this key. Ask the customer for another card and charge it " +
      "as a new operation, with a new key.",
    stored: true,
  },
  invalid_signature: {
    status: 400,
    title: "Invalid signature",
    message: "The event's Stripe-Signature does not verify.",
    action: "fix",
    advice:
      "POST /api/gateway/events takes only events the gateway signed with GATEWAY_WEBHOOK_SECRET in the last " +
      "5 minutes. Check the endpoint's secret; nothing was done.",
  },
  not_found: {
    status: 404,
    title: "Not found",
    message: "Not found.",
    action: "final",
    advice: "The resource does not exist or belongs to another API client.",
  },
  invalid_credentials: {
    status: 401,
    title: "Wrong credentials",
    message: "Wrong e-mail or password.",
    action: "fix",
    advice: "Staff sign-in only (/api/auth): check the e-mail, password or authentication code.",
  },
  cross_site_request: {
    status: 403,
    title: "Cross-site request",
    message: "This request must come from the dashboard's own pages.",
    action: "fix",
    advice: "Staff sign-in and dashboard changes are accepted only from the dashboard's own origin.",
  },
  too_many_attempts: {
    status: 429,
    title: "Too many attempts",
    message: "Too many failed attempts; try again later.",
    // Not "retry": resending at once changes nothing, and the wait (Retry-After) differs per answer.
    action: "fix",
    advice: "Staff sign-in only: wait `Retry-After` seconds; failures are counted per account and per address.",
  },
  method_not_allowed: {
    status: 405,
    title: "Method not allowed",
    message: "This method is not supported here.",
    action: "fix",
    advice: "Use a method listed in the `Allow` header.",
  },
  request_in_progress: {
    status: 409,
    title: "A request is outstanding for this Idempotency-Key",
    message: "A request with this Idempotency-Key is still being processed; retry later.",
    action: "retry",
    advice:
      "The first request with this key is still running. Wait `Retry-After` seconds and retry with the SAME " +
      "key and body; never switch to a new key, which would charge again.",
    retryAfterSeconds: RETRY_AFTER_SECONDS,
    idempotency: true,
  },
  body_too_large: {
    status: 413,
    title: "Body too large",
    message: "The request body is too large.",
    action: "fix",
    advice: "Send a smaller body. Nothing was stored.",
  },
  unsupported_media_type: {
    status: 415,
    title: "Unsupported media type",
    message: "Content-Type must be application/json.",
    action: "fix",
    advice: "Send `Content-Type: application/json`. Nothing was stored.",
  },
  request_timeout: {
    status: 408,
    title: "Request timeout",
    message: "The request body did not arrive in time.",
    action: "retry",
    advice:
      "The body was not received in full within the server's bound (`BODY_READ_TIMEOUT_MS`); nothing was stored. " +
      "Send the whole body at once, then retry with the SAME key and body.",
    retryAfterSeconds: RETRY_AFTER_SECONDS,
  },
  idempotency_key_reused: {
    status: 422,
    title: "Idempotency-Key is already used",
    message: "This Idempotency-Key was already used with a different request.",
    action: "fix",
    advice:
      "The key belongs to another request body, or to another API client. Keys must be unique across all " +
      "clients: use a UUIDv4, never an order number or a counter. A changed request is a new operation with a new key.",
    idempotency: true,
  },
  client_closed_request: {
    status: 499,
    title: "Client closed request",
    message: "The client closed the connection before the request was processed.",
    action: "retry",
    advice: "Only seen in server logs: the client had hung up. Nothing was stored or charged.",
  },
  internal_error: {
    status: 500,
    title: "Internal error",
    message: "An internal error occurred.",
    action: "retry",
    advice: "Retry with the SAME key and body: the server makes that safe. Report it if it persists.",
  },
  request_abandoned: {
    status: 500,
    title: "Request abandoned",
    message:
      "The request was given up, and the payment gateway did not carry it out and no longer can; no money moved.",
    action: "final",
    advice:
      "Final, and replayed (Idempotent-Replay: true) to every retry with this key: no charge or refund was made. " +
      "`error.gateway` says what the gateway showed: `refused` (it received the request and refused it, " +
      "`gateway_code` says why) or `no_trace` (it has no trace of it). " +
      "To charge, start a new operation with a new key.",
    stored: true,
  },
  gateway_unavailable: {
    status: 503,
    title: "Payment gateway unavailable",
    message: "The payment gateway did not answer; retry with the same Idempotency-Key.",
    action: "retry",
    advice:
      "The charge may or may not have happened. Retry with the SAME key and body after `Retry-After`: " +
      "the gateway answers a retry with the charge it already made, so nobody is charged twice.",
    retryAfterSeconds: RETRY_AFTER_SECONDS,
  },
  charge_outcome_unknown: {
    status: 502,
    title: "Outcome unknown (no Idempotency-Key)",
    message:
      "The payment gateway's answer is not known here (it did not answer in time, or the server is still settling " +
      "the request) and this request had no Idempotency-Key: the charge may have been made. " +
      "Do not send it again; look it up by its request_id.",
    action: "final",
    advice:
      "A request without an Idempotency-Key cannot be retried safely: sending it again is a new charge. The server " +
      "settles this one with the gateway (within a minute or two); read its outcome with " +
      "`GET /api/charges?request_id=<request_id>` (the stored answer once settled, 409 until then). Send an " +
      "Idempotency-Key with every charge to be able to retry.",
  },
  charge_not_refundable: {
    status: 400,
    title: "Charge not refundable",
    message: "Only a succeeded charge can be refunded.",
    action: "final",
    advice: "The charge was declined or failed: no money moved, so there is nothing to refund. Nothing was stored.",
  },
  charge_already_refunded: {
    status: 400,
    title: "Charge already refunded",
    message: "The whole charge has been refunded.",
    action: "final",
    advice:
      "Succeeded refunds cover the whole charge: see its `amount_refunded_cents` and `refunds`. Said only of money " +
      "refunded, never of refunds still in flight (those answer `refund_in_progress`). Nothing was stored.",
  },
  refund_in_progress: {
    status: 409,
    title: "Another refund of this charge is in flight",
    message: "Refunds in flight hold what is left of this charge; retry later.",
    action: "retry",
    advice:
      "Refunds in flight hold the part of the charge this one needs (`error.held_cents`). Wait `Retry-After` " +
      "seconds and retry with the SAME key and body: if they fail, their amount is free again and this refund is " +
      "made; if they succeed, the retry is answered `charge_already_refunded` or a 400 naming `amount_cents`. " +
      "Nothing was stored.",
    retryAfterSeconds: RETRY_AFTER_SECONDS,
  },
  refund_declined: {
    status: 402,
    title: "Refund declined",
    message: "The payment gateway refused the refund; no money moved.",
    action: "final",
    advice: "Final, and replayed to every retry with this key. Nothing was refunded; see `error.decline_code`.",
    stored: true,
  },
  refund_outcome_unknown: {
    status: 502,
    title: "Refund outcome unknown (no Idempotency-Key)",
    message:
      "The payment gateway's answer is not known here and this request had no Idempotency-Key: the refund may have " +
      "been made. Do not send it again; look it up by its request_id.",
    action: "final",
    advice:
      "A refund without an Idempotency-Key cannot be retried safely. The server settles it with the gateway; read " +
      "its outcome with `GET /api/refunds?request_id=<request_id>`. Send an Idempotency-Key with every refund.",
  },
  service_unavailable: {
    status: 503,
    title: "Service unavailable",
    message: "The service is temporarily unavailable; retry with the same Idempotency-Key.",
    action: "retry",
    advice: "Retry with the SAME key and body after `Retry-After`.",
    retryAfterSeconds: RETRY_AFTER_SECONDS,
  },
} as const satisfies Record<string, ErrorSpec>;

export type ApiErrorCode = keyof typeof API_ERRORS;

export const API_ERROR_CODES = Object.keys(API_ERRORS) as ApiErrorCode[];

export function isApiErrorCode(code: unknown): code is ApiErrorCode {
  return typeof code === "string" && Object.hasOwn(API_ERRORS, code);
}

export function errorSpec(code: ApiErrorCode): ErrorSpec {
  return API_ERRORS[code];
}

/** `retryable` in every error body: the same key and body may be sent again, later, for another answer. */
export const isRetryableCode = (code: ApiErrorCode) => API_ERRORS[code].action === "retry";

/** Where the API reference is served (src/app/docs). */
export const DOCS_PATH = "/docs";

/**
 * The anchor of a code's entry on /docs: Redoc names a `## <code>` heading under
 * the `# Errors` heading of the OpenAPI description `section/Errors/<code>`.
 */
export function docAnchor(code: ApiErrorCode): string {
  return `section/Errors/${code}`;
}

/** The code's documentation, relative to the API's origin (`doc_url`, `type`, `Link` resolve it). */
export function docPath(code: ApiErrorCode): string {
  return `${DOCS_PATH}#${docAnchor(code)}`;
}

/**
 * Statuses that mean "may not have reached the app, ask again" when the answer
 * carries none of our codes: a proxy's or load balancer's page, a crash page.
 */
export const RETRYABLE_STATUSES_WITHOUT_CODE: readonly number[] = [500, 502, 503, 504];
