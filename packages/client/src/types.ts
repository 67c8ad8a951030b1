import type { ApiErrorCode } from "./errorRegistry.js";

export type CreateChargeParams = {
  amount_cents: number;
  currency: string;
  card_token: string;
  customer_id?: string | null;
};

export type RefundReason = "duplicate" | "requested_by_customer" | "fraudulent";

export type CreateRefundParams = {
  /** The charge's id, `ch_...`. */
  charge: string;
  /** Default: what is left to refund on the charge. */
  amount_cents?: number;
  reason?: RefundReason;
};

export type Refund = {
  id: string;
  object: "refund";
  charge: string;
  amount_cents: number;
  currency: string;
  status: "succeeded";
  reason: RefundReason | null;
  gateway_refund_id: string;
  created_at: string;
};

export type Charge = {
  id: string;
  object: "charge";
  amount_cents: number;
  currency: string;
  status: "succeeded" | "failed";
  customer_id: string | null;
  failure_code: string | null;
  gateway_charge_id: string;
  amount_refunded_cents: number;
  refunds: Refund[];
  /** When the operation's first request arrived (absent from answers stored before the field existed). */
  requested_at?: string;
  /** When the charge was settled (recorded). */
  created_at: string;
};

/** A code of the error registry (a newer server may send one this SDK does not know yet, hence any string). */
export type ApiErrorBody = {
  code: ApiErrorCode | (string & {});
  message: string;
  /** True: send the same key and body again later (after `Retry-After`); false: this answer does not change. */
  retryable?: boolean;
  doc_url?: string;
  [detail: string]: unknown;
};

type Answered = {
  status: number;
  replayed: boolean;
  attempts: number;
  idempotencyKey: string;
  /** The server's Request-Id of the answer (quote it to support); null if the answer had none (a proxy's). */
  requestId: string | null;
  /** A replay's Original-Request: the Request-Id of the request whose answer it replays. */
  originalRequestId: string | null;
  /** Idempotency-Key-Expires: until when the server answers this key with this operation (null if not said). */
  keyExpiresAt: Date | null;
};

/** The final answer of a money operation: the object under its own name (`charge`, `refund`), or the error. */
export type OperationResult<Name extends string, Created> =
  | (Answered & { ok: true } & { [K in Name]: Created })
  | (Answered & { ok: false; error: ApiErrorBody });

export type ChargeResult = OperationResult<"charge", Charge>;
export type RefundResult = OperationResult<"refund", Refund>;

/** What findByIdempotencyKey learned about an operation. */
export type OperationState<Result = ChargeResult> =
  /** Finished: the same result create gives (replayed: true). */
  | { state: "complete"; result: Result }
  /** Still running (or its gateway outcome is being settled): ask again after retryAfterMs. */
  | { state: "in_progress"; ageSeconds: number | undefined; retryAfterMs: number; idempotencyKey: string }
  /**
   * Nothing is recorded under this key for this API client (never arrived, or not yours): within the key's
   * lifetime, sending the operation again with the same key and body is safe.
   */
  | { state: "unknown"; idempotencyKey: string }
  /**
   * Nothing is recorded under this key any more, and this client's store holds an operation under it whose key
   * has expired: the server may have forgotten it after carrying it out. Never send it again (a new operation).
   */
  | { state: "expired"; idempotencyKey: string; keyExpiredAt: Date; reference: string };
