export type CreateChargeParams = {
  amount_cents: number;
  currency: string;
  card_token: string;
  customer_id?: string | null;
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
  created_at: string;
};

export type ApiErrorBody = { code: string; message: string; doc_url?: string; [detail: string]: unknown };

export type ChargeResult =
  | { ok: true; status: number; charge: Charge; replayed: boolean; attempts: number; idempotencyKey: string }
  | { ok: false; status: number; error: ApiErrorBody; replayed: boolean; attempts: number; idempotencyKey: string };

/** What findByIdempotencyKey learned about an operation. */
export type OperationState =
  /** Finished: the same result createCharge gives (replayed: true). */
  | { state: "complete"; result: ChargeResult }
  /** Still running (or its gateway outcome is being settled): ask again after retryAfterMs. */
  | { state: "in_progress"; ageSeconds: number | undefined; retryAfterMs: number; idempotencyKey: string }
  /** Nothing is recorded under this key for this API client (never arrived, expired after 24 h, or not yours). */
  | { state: "unknown"; idempotencyKey: string };
