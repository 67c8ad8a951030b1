import type { Statement } from "~/server/db";
import type { FinishedBy, IdempotencyRecord, StoredResponse } from "./lifecycle";

export type { StoredResponse };

/** What identifies an operation and its payload. A null key is a keyless request (its own operation). */
export type ClaimInput = {
  idempotencyKey: string | null;
  route: string;
  apiClientId: number;
  requestHash: string;
  /** For the dashboard, stored with the claim: the customer the request names... */
  customerId?: string | null;
  /** ...and its fields as sent, without anything secret (the card token). Never used to decide anything. */
  fields?: Record<string, unknown> | null;
  /** Keyless only: a condition the claim must meet, learnt in the claim's own round trip (Admission). */
  admission?: Admission;
  /** Called once when this claim made a new record (not on a replay, a 409 or a take-over): an operation began. */
  onNewRecord?: () => void;
  /**
   * Keyed only: writes of the operation's own made in the transaction that makes its record, at the same commit
   * (a refund's hold), as a block that ends with a SELECT and reads the new record's id as `v_inserted_id`
   * (db/statements.ts, insertThen). Its rows reach the work as `HeldClaim.atClaim`; a take-over of the record
   * makes none, so work must not count on them. They must not wait for locks (a lock wait timeout of 0): the
   * record is invisible until they commit. On a lock conflict the claim is made without them. They may decline
   * the operation (`SET v_declined = TRUE`): the record and the writes are rolled back, and the request is
   * answered `declined` with their rows, having left nothing (a refund of more than is left).
   */
  atClaim?: Statement;
};

/**
 * What decides whether a keyless request may go on (the rollout mode), read in
 * the same socket write as its claim's INSERT instead of in a round trip before
 * it. When `admits` says no, the fresh claim is withdrawn (deleted, before any
 * work) together with `refusalWrites()`, in one transaction, and the request is
 * answered `refused`. The writes are made only then: an admitted request, the
 * common case, pays nothing for them.
 */
export type Admission = {
  read: Statement;
  admits: (rows: unknown[]) => boolean;
  refusalWrites: () => Statement[];
};

/** A claim this process holds: the record, and when its work must be done by. */
export type HeldClaim = {
  record: IdempotencyRecord;
  /** Work must end by then (the lease ends a margin later); a call to the gateway is bounded by it. */
  deadline: Date;
  /** The rows of the claim's `atClaim` writes, when this request's claim made the record. */
  atClaim?: unknown[];
};

/**
 * What the work done under a claim came to:
 * - complete: store `response`, together with `writes`, in one transaction;
 * - unknown: the outcome is not known (the money may have moved): release the
 *   claim so that the next attempt asks again;
 * - declined: the operation cannot be made, and neither this attempt nor any
 *   before it moved money or wrote anything (a refund whose hold refused, where
 *   the claim was made without it): the record is withdrawn, as if the claim's
 *   own writes had declined, so that nothing is stored and the key stays usable.
 */
export type WorkResult =
  | {
      kind: "complete";
      response: StoredResponse;
      writes: Statement[];
      finishedBy?: Exclude<FinishedBy, "request">;
      /** What the merchant is told happened (its event, written with the rows: operations/completion.ts). */
      event?: CompletionEvent;
    }
  | { kind: "unknown" }
  | { kind: "declined"; rows: unknown[] };

/** A finished operation's event, as its work knows it: the type and the object as the API shows it. */
export type CompletionEvent = {
  type: "charge.succeeded" | "charge.failed" | "refund.succeeded" | "refund.failed";
  object: Record<string, unknown>;
  /** The charge it concerns (a refund's charge too). */
  chargeId: string;
};

/** What a request under an idempotency key gets. */
export type IdempotentOutcome =
  /** This request did the work and stored its answer; the key names this operation until `expiresAt`. */
  | { kind: "fresh"; response: StoredResponse; expiresAt: Date }
  /** The stored answer of an earlier attempt; who finished it, when read from its record (not from memory). */
  | { kind: "replay"; response: StoredResponse; expiresAt: Date; finishedBy?: FinishedBy }
  /** Another attempt holds the operation; `since` is when the operation started. */
  | { kind: "in_progress"; since: Date | null; expiresAt?: Date }
  /** Another payload, or another client's key: nothing about it is revealed. */
  | { kind: "key_reused" }
  /** The work's outcome is unknown; the claim was released for the next attempt (or, keyless, for the sweeper). */
  | { kind: "unknown_outcome"; requestId: bigint }
  /** Keyless, and its admission said no: nothing was charged, and nothing of it is left but `refusalWrites()`. */
  | { kind: "refused" }
  /** Its claim's own writes (ClaimInput.atClaim) or its work declined it: nothing of it is left; their rows. */
  | { kind: "declined"; rows: unknown[] };
