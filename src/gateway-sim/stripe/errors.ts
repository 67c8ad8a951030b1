/**
 * Stripe's error objects, as the API sends them: `{ "error": { type, code?,
 * decline_code?, message, param?, ... } }` with the status Stripe uses for each
 * kind. The official SDK picks its error class from the status and `type`, so
 * these must match for the adapter to see what it would see in production.
 */
export type StripeErrorBody = {
  type: "api_error" | "card_error" | "idempotency_error" | "invalid_request_error";
  message: string;
  code?: string;
  decline_code?: string;
  param?: string;
  doc_url?: string;
  charge?: string;
  payment_intent?: unknown;
  payment_method?: unknown;
};

/** Thrown by a handler to answer with a Stripe error. */
export class StripeHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: StripeErrorBody,
  ) {
    super(body.message);
  }
}

const docUrl = (code: string) => `https://docs.stripe.com/error-codes/${code.replaceAll("_", "-")}`;

export const invalidRequest = (message: string, extra: { code?: string; param?: string } = {}) =>
  new StripeHttpError(400, {
    type: "invalid_request_error",
    message,
    ...extra,
    ...(extra.code && { doc_url: docUrl(extra.code) }),
  });

export const unknownParameter = (param: string) => invalidRequest(`Received unknown parameter: ${param}`, { param });

export const resourceMissing = (what: string, id: string, param: string) =>
  new StripeHttpError(param === "id" ? 404 : 400, {
    type: "invalid_request_error",
    code: "resource_missing",
    param,
    message: `No such ${what}: '${id}'`,
    doc_url: docUrl("resource_missing"),
  });

export const authenticationRequired = () =>
  new StripeHttpError(401, {
    type: "invalid_request_error",
    message: "You did not provide an API key. Provide it in the Authorization header (Bearer auth).",
  });

export const invalidApiKey = (key: string) =>
  new StripeHttpError(401, {
    type: "invalid_request_error",
    message: `Invalid API Key provided: ${key.slice(0, 8)}${"*".repeat(Math.max(0, key.length - 12))}${key.slice(-4)}`,
  });

/** 400: the key was first used with other parameters (or on another endpoint). */
export const idempotencyMismatch = (key: string) =>
  new StripeHttpError(400, {
    type: "idempotency_error",
    message:
      "Keys for idempotent requests can only be used with the same parameters they were first used with. " +
      `Try using a key other than '${key}' if you meant to execute a different request.`,
  });

/** 409: a request with this key is still executing; nothing is saved, retrying later is safe. */
export const idempotencyKeyInUse = (key: string) =>
  new StripeHttpError(409, {
    type: "idempotency_error",
    code: "idempotency_key_in_use",
    message:
      "There is currently another in-progress request using this Idempotent Key (that probably means you submitted " +
      `twice, and the other request is still going through): ${key}. Please try again later.`,
    doc_url: docUrl("idempotency_key_in_use"),
  });

export const rateLimited = () =>
  new StripeHttpError(429, {
    type: "invalid_request_error",
    code: "rate_limit",
    message: "Request rate limit exceeded. Learn more about rate limits here https://docs.stripe.com/rate-limits.",
    doc_url: docUrl("rate_limit"),
  });

export const apiError = () =>
  new StripeHttpError(500, { type: "api_error", message: "An unknown error occurred (simulated processor failure)." });
