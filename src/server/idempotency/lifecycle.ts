/**
 * The lifecycle of an idempotency record, as a pure state model: the one place that decodes a record's phase from
 * its columns (and says which columns each phase has, for queries that select by phase), names the transitions
 * between phases and the phases each may start from, and the rule of expiry. The statement that performs each
 * transition, with the record it leaves, is records.ts; how a phase is worded for people is the dashboard's
 * (src/server/requests/phaseDisplay.ts).
 *
 *                 claim (INSERT)
 *                      |
 *                      v
 *     +-----------> held ----- lease ends ----> lease_expired
 *     |            |    |                            |
 *     |   release  |    | complete                   | take (a retry, or the sweeper)
 *     |  (outcome  |    v                            |
 *     |  unknown)  |  complete: by the request,      |
 *     |            v  reconciled or abandoned        |
 *     +--take-- released                             |
 *     ^                                              |
 *     +----------------------------------------------+
 *
 * - `held`: a process owns the claim until `leaseExpiresAt` (a margin after the
 *   gateway timeout), under fencing token `attempt`.
 * - `lease_expired`: its holder died or stalled; the next retry (or the
 *   sweeper) takes it over with attempt + 1 and asks the gateway again under
 *   the same derived key, which answers with any charge it already made.
 * - `released`: the holder did not learn the gateway's outcome (the money may
 *   have moved) and gave the claim back; the next retry takes it again.
 * - `complete`: the stored answer, finished by the request itself, or by the
 *   sweeper: `reconciled` (the gateway had charged) or `abandoned` (it had not).
 *
 * Only `complete` records expire and are pruned. An in-progress record, however
 * old, is first finished by the sweeper (which asks the gateway): deleting it
 * would give its key a new record, hence a new gateway key, and a second charge.
 * The one exception is `withdraw`: its holder deletes a record that moved
 * nothing, so that nothing is stored: a keyless claim whose own request learns,
 * from the read sent with its INSERT, that the header is required, or work
 * that declined before any gateway call of this attempt or an earlier one (a
 * refund whose hold refused: every attempt holds before it calls, only while
 * it holds the record, `attemptFence`, and a hold ends only with the record's
 * completion). No gateway call was made under the record, so a later record's
 * new gateway key cannot make a second one.
 *
 * The other: `correct`. A write-off is final, and true by the rule of write-offs (operations/finality.ts) as
 * long as the gateway's late-landing time is configured right; where a refund landed after it all the same, the
 * reconciliation records it, and the stored answer becomes the refund (reconciled), so that no replay goes on
 * saying "no refund was made" (ledger/recordLateRefund.ts).
 *
 * Every transition is one conditional statement that names the attempt it was
 * decided on; 0 rows changed means someone else moved the record first.
 * Models: AWS Lambda Powertools' IdempotencyRecordStatus, brandur's
 * rocket-rides-atomic (recovery points, reaper, completer).
 */
import type { FinishedBy, IdempotentRequest } from "~/generated/prisma/client";
export type { FinishedBy };

/**
 * The exact answer stored for an operation: replayed verbatim. `requestId`: the Request-Id of the request that
 * produced it (absent when the sweeper did), named by every replay in Original-Request.
 */
export type StoredResponse = { status: number; body: string; requestId?: string | null };

export type Phase =
  | { name: "held"; leaseExpiresAt: Date }
  | { name: "lease_expired"; leaseExpiresAt: Date }
  | { name: "released" }
  | { name: "complete"; finishedBy: FinishedBy; response: StoredResponse };

export type PhaseName = Phase["name"];

/** A record as every module outside this folder sees it: columns decoded, phase named. */
export type IdempotencyRecord = {
  id: bigint;
  /** null for a keyless request. */
  idempotencyKey: string | null;
  route: string;
  apiClientId: number;
  requestHash: string;
  attempt: number;
  phase: Phase;
  /** When a request last started work that may have reached the gateway (see the schema). */
  lastAttemptAt: Date;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date;
};

/** A record whose columns no transition could have produced. It is reported, never given a made-up status. */
export class ImpossibleRecordError extends Error {
  constructor(id: bigint, why: string) {
    super(`idempotency record ${id} is in an impossible state: ${why}`);
    this.name = "ImpossibleRecordError";
  }
}

/** Keys are printable ASCII (checked by the header parser), stored as their bytes. */
export const keyToBytes = (key: string): Uint8Array<ArrayBuffer> => new Uint8Array(Buffer.from(key, "latin1"));
export const keyFromBytes = (bytes: Uint8Array): string => Buffer.from(bytes).toString("latin1");

/** The row as Prisma reads it (and as raw SQL rows are mapped to). */
export type RecordRow = Pick<
  IdempotentRequest,
  | "id"
  | "idempotencyKey"
  | "route"
  | "apiClientId"
  | "requestHash"
  | "state"
  | "attempt"
  | "leaseExpiresAt"
  | "lastAttemptAt"
  | "responseStatus"
  | "responseBody"
  | "responseRequestId"
  | "finishedBy"
  | "createdAt"
  | "updatedAt"
  | "expiresAt"
>;

export function phaseOf(row: RecordRow, now: Date = new Date()): Phase {
  if (row.state === "complete") {
    if (row.finishedBy === null) throw new ImpossibleRecordError(row.id, "complete without finished_by");
    if (row.responseStatus === null || row.responseBody === null) {
      throw new ImpossibleRecordError(row.id, "complete without a stored response");
    }
    if (row.leaseExpiresAt !== null) throw new ImpossibleRecordError(row.id, "complete with a lease");
    return {
      name: "complete",
      finishedBy: row.finishedBy,
      response: {
        status: row.responseStatus,
        body: row.responseBody,
        ...(row.responseRequestId !== null && { requestId: row.responseRequestId }),
      },
    };
  }
  if (row.finishedBy !== null || row.responseStatus !== null) {
    throw new ImpossibleRecordError(row.id, "in progress with a stored outcome");
  }
  if (row.leaseExpiresAt === null) return { name: "released" };
  return row.leaseExpiresAt > now
    ? { name: "held", leaseExpiresAt: row.leaseExpiresAt }
    : { name: "lease_expired", leaseExpiresAt: row.leaseExpiresAt };
}

export function decodeRecord(row: RecordRow, now: Date = new Date()): IdempotencyRecord {
  return {
    id: row.id,
    idempotencyKey: row.idempotencyKey === null ? null : keyFromBytes(row.idempotencyKey),
    route: row.route,
    apiClientId: row.apiClientId,
    requestHash: row.requestHash,
    attempt: row.attempt,
    phase: phaseOf(row, now),
    lastAttemptAt: row.lastAttemptAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    expiresAt: row.expiresAt,
  };
}

/** The phases a transition may start from; the statements below enforce the same in SQL. */
export const TRANSITIONS = {
  claim: { from: [] as PhaseName[], to: "held" },
  renew: { from: ["held", "lease_expired"] as PhaseName[], to: "held" },
  release: { from: ["held", "lease_expired"] as PhaseName[], to: "released" },
  complete: { from: ["held", "lease_expired"] as PhaseName[], to: "complete" },
  take: { from: ["released", "lease_expired"] as PhaseName[], to: "held" },
  expire: { from: ["complete"] as PhaseName[], to: "deleted" },
  /** Its holder's own, when nothing moved: see the header. */
  withdraw: { from: ["held", "lease_expired"] as PhaseName[], to: "deleted" },
  /** A write-off the gateway contradicted later (a refund cannot be taken back): the answer becomes the truth. */
  correct: { from: ["complete"] as PhaseName[], to: "complete" },
} as const;

export type Transition = keyof typeof TRANSITIONS;

/** Past its lifetime a complete record's key names a new operation; nothing else ever expires. */
export const isExpired = (record: IdempotencyRecord, now: Date) =>
  record.phase.name === "complete" && record.expiresAt <= now;

/**
 * Timing of a hold: how long it lasts, and how long its key lives once the record completes; and how long after
 * its first attempt an operation may still reach for the gateway: a retry takes it over to call the gateway only
 * while its whole lease ends within `attemptWindowMs` of the first attempt, and as recovery (asking only) after
 * that, so that no client, however it retries, keeps an operation from its final answer (operations/finality.ts).
 */
export type Timing = { leaseMs: number; ttlMs: number; attemptWindowMs: number };

/** Whether a take-over at `now` may call the gateway (`retry`), or only ask what happened (`recovery`). */
export function takerAt(record: IdempotencyRecord, now: Date, { leaseMs, attemptWindowMs }: Timing): Taker {
  return now.getTime() + leaseMs <= record.createdAt.getTime() + attemptWindowMs ? "retry" : "recovery";
}

/**
 * Who takes a claim over: a retry, whose work calls the gateway again (its attempt time moves), or recovery (the
 * sweeper, the reconciliation, a settling GET, a retry past the attempt window), which only asks the gateway what
 * happened and leaves the attempt time where it was.
 */
export type Taker = "retry" | "recovery";

/**
 * The finest name of a phase: in progress by phase, complete by who finished it. What the request log filters on
 * and the dashboard words (requests/phaseDisplay.ts).
 */
export type PhaseKey = Exclude<PhaseName, "complete"> | FinishedBy;

export function phaseKey(phase: Phase): PhaseKey {
  return phase.name === "complete" ? phase.finishedBy : phase.name;
}

/** A phase key, or every in-progress or every complete record. */
export type PhaseFilter = PhaseKey | "in_progress" | "complete";

/**
 * The records of a phase as an SQL condition on their columns: phaseOf, the other way round. `now` is the clock
 * the lease is judged by, as in phaseOf.
 */
export function phaseCondition(filter: PhaseFilter, now: Date): { sql: string; values: unknown[] } {
  switch (filter) {
    case "in_progress":
      return { sql: "state = 'in_progress'", values: [] };
    case "held":
      return { sql: "state = 'in_progress' AND lease_expires_at > ?", values: [now] };
    case "lease_expired":
      return { sql: "state = 'in_progress' AND lease_expires_at <= ?", values: [now] };
    case "released":
      return { sql: "state = 'in_progress' AND lease_expires_at IS NULL", values: [] };
    case "complete":
      return { sql: "state = 'complete'", values: [] };
    case "request":
    case "reconciled":
    case "abandoned":
      return { sql: "state = 'complete' AND finished_by = ?", values: [filter] };
  }
}

/** The columns of a record as raw SQL selects them, named as Prisma names them (so decodeRecord reads both). */
const COLUMNS = [
  ["id", "id"],
  ["idempotency_key", "idempotencyKey"],
  ["route", "route"],
  ["api_client_id", "apiClientId"],
  ["request_hash", "requestHash"],
  ["state", "state"],
  ["attempt", "attempt"],
  ["lease_expires_at", "leaseExpiresAt"],
  ["last_attempt_at", "lastAttemptAt"],
  ["response_status", "responseStatus"],
  ["response_body", "responseBody"],
  ["response_request_id", "responseRequestId"],
  ["finished_by", "finishedBy"],
  ["created_at", "createdAt"],
  ["updated_at", "updatedAt"],
  ["expires_at", "expiresAt"],
] as const;

export const RECORD_COLUMNS = COLUMNS.map(([column, name]) => (column === name ? column : `${column} AS ${name}`)).join(
  ", ",
);
