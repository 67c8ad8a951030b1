import { MAX_KEY_LENGTH } from "./idempotencyProtocol.js";
import type { ApiErrorBody } from "./types.js";

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

/** How the deadline error names its operation and the calls that settle it. */
type Wording = { noun: string; find: string; create: string };

/**
 * The deadline passed without a final answer: the operation may or may not have been carried out.
 * Caught as one class for every operation; ChargeDeadlineError and RefundDeadlineError say which.
 */
export class OperationDeadlineError extends Error {
  constructor(
    readonly idempotencyKey: string,
    readonly attempts: number,
    readonly lastProblem: string,
    { noun, find, create }: Wording,
  ) {
    super(
      `No final answer for Idempotency-Key ${idempotencyKey} after ${attempts} attempts (last: ${lastProblem}). ` +
        `The ${noun} may or may not have been made, so never retry it with a new key. Settle it without ` +
        `resending: ${find}("${idempotencyKey}") answers "complete" (with the stored result), "in_progress" ` +
        `(ask again after retryAfterMs) or "unknown" (nothing was recorded under this key: send ${create} ` +
        `again with the same key and body). Or simply call ${create} again with the same key and body.`,
    );
    this.name = "OperationDeadlineError";
  }
}

/** createCharge (client.charges.create) ran out of time: the charge may or may not have been made. */
export class ChargeDeadlineError extends OperationDeadlineError {
  constructor(idempotencyKey: string, attempts: number, lastProblem: string) {
    super(idempotencyKey, attempts, lastProblem, {
      noun: "charge",
      find: "findByIdempotencyKey",
      create: "createCharge",
    });
    this.name = "ChargeDeadlineError";
  }
}

/** client.refunds.create ran out of time: the refund may or may not have been made. */
export class RefundDeadlineError extends OperationDeadlineError {
  constructor(idempotencyKey: string, attempts: number, lastProblem: string) {
    super(idempotencyKey, attempts, lastProblem, {
      noun: "refund",
      find: "refunds.findByIdempotencyKey",
      create: "refunds.create",
    });
    this.name = "RefundDeadlineError";
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

/** The stored operation under this reference was made with another body (or key, or is another kind). */
export class OperationMismatchError extends Error {
  constructor(readonly reference: string) {
    super(
      `Operation "${reference}" is stored with another body or key, or as another kind of operation (a charge, ` +
        "a refund); a changed request is a new operation and needs a new reference.",
    );
    this.name = "OperationMismatchError";
  }
}

/**
 * The operation's Idempotency-Key has outlived the server's memory of it: sent again, it could be taken as a new
 * operation and charge (or refund) a second time. So it was NOT sent. What is known of it is here: `settled` (its
 * final answer's status, if one arrived), its key and body; find out what became of it by other means (GET the
 * charge by its id, the dashboard, support), never by sending it again.
 */
export class OperationExpiredError extends Error {
  constructor(
    readonly reference: string,
    readonly idempotencyKey: string,
    readonly keyExpiredAt: Date,
    readonly settled: { status: number; replayed: boolean; at: string } | undefined,
  ) {
    const known = settled
      ? `Its final answer (HTTP ${settled.status}) arrived at ${settled.at}.`
      : "No final answer arrived for it: it may or may not have been made.";
    super(
      `Operation "${reference}" (Idempotency-Key ${idempotencyKey}) was not sent: its key expired at ` +
        `${keyExpiredAt.toISOString()}, after which the server takes it as a new operation. ${known} Settle it ` +
        "without resending it.",
    );
    this.name = "OperationExpiredError";
  }
}
