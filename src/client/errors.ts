import { MAX_KEY_LENGTH } from "../server/http/idempotencyProtocol";
import type { ApiErrorBody } from "./types";

/** The key cannot be sent: nothing was sent. */
export class InvalidIdempotencyKeyError extends TypeError {
  constructor(
    readonly idempotencyKey: string,
    reason: string,
  ) {
    super(`${reason}. Use one UUIDv4 per operation (1 to ${MAX_KEY_LENGTH} printable ASCII characters).`);
    this.name = "InvalidIdempotencyKeyError";
  }
}

/** The deadline passed without a final answer. The charge may or may not have been made. */
export class ChargeDeadlineError extends Error {
  constructor(
    readonly idempotencyKey: string,
    readonly attempts: number,
    readonly lastProblem: string,
  ) {
    super(
      `No final answer for Idempotency-Key ${idempotencyKey} after ${attempts} attempts (last: ${lastProblem}). ` +
        "The charge may or may not have been made, so never retry it with a new key. Settle it without resending: " +
        `findByIdempotencyKey("${idempotencyKey}") answers "complete" (with the stored result), "in_progress" ` +
        '(ask again after retryAfterMs) or "unknown" (nothing was recorded under this key: send createCharge ' +
        "again with the same key and body). Or simply call createCharge again with the same key and body.",
    );
    this.name = "ChargeDeadlineError";
  }
}

/** An answer that is neither a result nor worth retrying (for example 401): a problem to fix. */
export class ChargesApiError extends Error {
  constructor(
    readonly status: number,
    readonly error: ApiErrorBody,
  ) {
    super(`HTTP ${status} ${error.code}: ${error.message}`);
    this.name = "ChargesApiError";
  }
}

/** The stored operation under this reference was made with another body (or key). */
export class OperationMismatchError extends Error {
  constructor(readonly reference: string) {
    super(
      `Operation "${reference}" is stored with another body or key; a changed request is a new operation ` +
        "and needs a new reference.",
    );
    this.name = "OperationMismatchError";
  }
}
