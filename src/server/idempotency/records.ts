/**
 * The transitions of idempotency records (lifecycle.ts names them), each written once: the one conditional
 * statement that performs it, its execution, and the record it leaves as the process that made it may assume
 * without reading it back (test/lifecycle.test.ts re-reads each against its statement). The only writer of
 * `idempotent_requests`. Private to this folder; the rest of the app goes through runIdempotent.ts and
 * recovery.ts (Powertools' layering: public operations over a protected persistence layer).
 */
import pLimit from "p-limit";
import { env } from "~/env";
import {
  atomically,
  db,
  execute,
  insertReturningId,
  insertThen,
  insertThenRead,
  isDuplicateKeyError,
  isLockConflictError,
  queryRows,
  retryOnLockConflict,
  type Statement,
} from "~/server/db";
import { log } from "~/server/observability/log";
import { DB_LATER, DB_NOW, micros } from "./dbClock";
import { noteEvent } from "./events";
import {
  decodeRecord,
  keyToBytes,
  type FinishedBy,
  type IdempotencyRecord,
  type RecordRow,
  type Taker,
  type Timing,
} from "./lifecycle";
import { byKeyStatement } from "./queries";
import type { ClaimInput, StoredResponse } from "./types";

export const timing: Timing = {
  leaseMs: env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS,
  ttlMs: env.IDEMPOTENCY_KEY_TTL_HOURS * 3_600_000,
  attemptWindowMs: env.REAP_AFTER_MS,
};

/** When work under a hold must be done: a lease margin before the lease ends. */
export const deadlineOf = (leaseExpiresAt: Date) => new Date(leaseExpiresAt.getTime() - env.LEASE_MARGIN_MS);

/**
 * The database starts a lease when it runs the statement, which is after this process sent it: a lease measured
 * here from the moment of sending ends no later than the database's, whatever either clock says. That is the lease
 * end this process works to (deadlineOf); the database's own is what others compare against.
 */
const leaseFrom = (sentAt: Date, { leaseMs }: Timing) => new Date(sentAt.getTime() + leaseMs);

/** The key's lifetime from `at`, kept if the record already lives longer: a retry after hours is the same operation. */
const lifetimeFrom = (record: { expiresAt: Date }, at: Date, { ttlMs }: Timing) =>
  new Date(Math.max(record.expiresAt.getTime(), at.getTime() + ttlMs));

/** A transition that matched, for the key's timeline (events.ts; written within a second, never awaited). */
type NotedTransition = "claimed" | "taken_over" | "released" | "completed";
const noted = (record: IdempotencyRecord, kind: NotedTransition, detail: string | null, at?: Date) =>
  noteEvent({
    kind,
    at,
    detail,
    requestId: record.id,
    idempotencyKey: record.idempotencyKey,
    route: record.route,
    apiClientId: record.apiClientId,
    attempt: record.attempt,
  });

// claim: (nothing) -> held, attempt 1 ----------------------------------------------------------------------------

/** The INSERT that claims a key (or records a keyless request): held by this process, attempt 1. */
export function claimStatement(claim: ClaimInput, { leaseMs, ttlMs }: Timing): Statement {
  return {
    sql: `INSERT INTO idempotent_requests
            (idempotency_key, route, api_client_id, customer_id, request_hash, request_fields, state, attempt,
             lease_expires_at, last_attempt_at, created_at, updated_at, expires_at)
          VALUES (?, ?, ?, ?, ?, ?, 'in_progress', 1, ${DB_LATER}, ${DB_NOW}, ${DB_NOW}, ${DB_NOW}, ${DB_LATER})`,
    values: [
      claim.idempotencyKey === null ? null : Buffer.from(claim.idempotencyKey, "latin1"),
      claim.route,
      claim.apiClientId,
      claim.customerId ?? null,
      claim.requestHash,
      claim.fields ? JSON.stringify(claim.fields) : null,
      micros(leaseMs),
      micros(ttlMs),
    ],
  };
}

/** The record claimStatement leaves, sent at `sentAt`. */
export function afterClaim(claim: ClaimInput, id: bigint, sentAt: Date, t: Timing = timing): IdempotencyRecord {
  const { idempotencyKey, route, apiClientId, requestHash } = claim;
  return {
    id,
    idempotencyKey,
    route,
    apiClientId,
    requestHash,
    attempt: 1,
    phase: { name: "held", leaseExpiresAt: leaseFrom(sentAt, t) },
    lastAttemptAt: sentAt,
    createdAt: sentAt,
    updatedAt: sentAt,
    expiresAt: new Date(sentAt.getTime() + t.ttlMs),
  };
}

/**
 * The claim's read, sent in the same socket write as its INSERT: the record that holds the key, read only if the
 * INSERT changed no row. ROW_COUNT() is the INSERT's, the statement before it on the connection, so a fresh claim,
 * the common case, reads nothing back (its row would cost both sides the parsing of a 1.8 kB result), and a claim
 * that lost to the unique index gets its answer without a second round trip.
 */
export function claimReadStatement(idempotencyKey: string, route: string): Statement {
  const read = byKeyStatement(idempotencyKey, route);
  return { ...read, sql: `${read.sql} AND ROW_COUNT() < 1` };
}

/**
 * INSERTs the record, held by this process: the claim. One autocommitted statement, so there is no moment at which
 * the row exists but this process does not know it owns it. When the key is taken (the unique index says so), the
 * record that holds it, read in the same round trip, right after the INSERT failed (null if it was deleted in
 * between: expired). A keyless record (NULL key) never meets the unique index and needs no read.
 */
export async function claim(
  claim: ClaimInput,
  now: Date,
): Promise<
  | { claimed: IdempotencyRecord; atClaim?: unknown[] }
  | { found: IdempotencyRecord | null }
  | { refused: true }
  | { declined: unknown[] }
  | Conflicted
> {
  if (claim.idempotencyKey === null) return claimKeyless(claim, now);
  const insert = claimStatement(claim, timing);
  // A conflict here (a lock held elsewhere, which the writes do not wait for) sends the caller round again, to
  // claim without the writes: the record alone, visible while the work waits and then makes the writes itself.
  if (claim.atClaim) return claimWithWrites(claim, claim.idempotencyKey, insert, claim.atClaim, now);
  const result = await insertThenRead<RecordRow>(insert, claimReadStatement(claim.idempotencyKey, claim.route));
  if ("insertId" in result) return { claimed: claimed(claim, result.insertId, now) };
  if (!isDuplicateKeyError(result.insertError)) return conflictedOrThrow(result.insertError);
  return { found: result.rows[0] ? decodeRecord(result.rows[0], now) : null };
}

/**
 * A claim whose operation writes at the same commit (ClaimInput.atClaim): one transaction makes both or neither,
 * so a failure of either leaves nothing, nor does a decline; a lock conflict (the writes do not wait) is answered
 * `conflicted`.
 */
async function claimWithWrites(
  claim: ClaimInput,
  idempotencyKey: string,
  insert: Statement,
  atClaim: Statement,
  now: Date,
): Promise<
  | { claimed: IdempotencyRecord; atClaim: unknown[] }
  | { found: IdempotencyRecord | null }
  | { declined: unknown[] }
  | Conflicted
> {
  const read = byKeyStatement(idempotencyKey, claim.route);
  const result = await insertThen<unknown, RecordRow>(insert, atClaim, read).catch(conflictedOrThrow);
  if ("conflicted" in result || "declined" in result) return result;
  if ("insertId" in result) return { claimed: claimed(claim, result.insertId, now), atClaim: result.rows };
  return { found: result.duplicate[0] ? decodeRecord(result.duplicate[0], now) : null };
}

/** The record this process just inserted, noted on the key's timeline. */
function claimed(claim: ClaimInput, id: bigint, now: Date): IdempotencyRecord {
  const record = afterClaim(claim, id, now);
  noted(record, "claimed", null, now);
  return record;
}

/**
 * The claim's INSERT lost to a lock conflict: InnoDB picked it as a deadlock victim, or Galera failed its
 * certification against another node's insert (both 1213). Nothing was inserted: the caller goes round again.
 * Decided here, from the INSERT's own error, and only there: an error after a successful INSERT must never send
 * a claim round again (a second record for one request).
 */
type Conflicted = { conflicted: true };

function conflictedOrThrow(insertError: unknown): Conflicted {
  if (isLockConflictError(insertError)) return { conflicted: true };
  throw insertError;
}

/**
 * A keyless claim, and its admission (the rollout mode) read in the same round trip. Refused, the claim is
 * withdrawn together with the refusal's writes (its count), in one transaction.
 *
 * If the read fails, the request fails, and its claim is withdrawn where that can be done; where not, the record
 * is left held, like a crash's, and the sweeper finishes it (it asks the gateway, which was asked nothing, and
 * writes it off as abandoned). If the withdrawal does not land (its fence matched nothing: this process stalled
 * past its lease and the sweeper took the record over; or it failed), the request is refused all the same, and is
 * counted when the sweeper finishes its record: as an accepted keyless request, not a refused one, the one count
 * this rare path gets wrong (conservatively: it says keyless traffic was accepted, which only delays enforcing).
 * Both are logged.
 */
async function claimKeyless(
  claim: ClaimInput,
  now: Date,
): Promise<{ claimed: IdempotencyRecord } | { refused: true } | Conflicted> {
  const insert = claimStatement(claim, timing);
  const { admission } = claim;
  if (!admission) {
    const inserted = await insertReturningId(insert).catch(conflictedOrThrow);
    return typeof inserted === "bigint" ? { claimed: claimed(claim, inserted, now) } : inserted;
  }
  const result = await insertThenRead<unknown>(insert, admission.read);
  if ("insertError" in result) return conflictedOrThrow(result.insertError);
  const rows =
    result.rows ??
    (await queryRows<unknown>(admission.read).catch(async (error: unknown) => {
      // Not known whether it may go on: nothing is done under the claim, and the request fails (503 or 500). The
      // claim is withdrawn first where it can be, so that no write-off for a request never worked is left.
      await execute(withdrawStatement({ id: result.insertId, attempt: 1 })).catch(() => {});
      throw error;
    }));
  if (admission.admits(rows)) return { claimed: claimed(claim, result.insertId, now) };
  const withdrawal = [withdrawStatement({ id: result.insertId, attempt: 1 }), ...admission.refusalWrites()];
  const withdrawn = await retryOnLockConflict(() => atomically(withdrawal)).catch((error: unknown) => {
    log.warn({ err: error, requestId: String(result.insertId) }, "refused keyless claim not withdrawn");
    return null;
  });
  if (withdrawn === false) log.warn({ requestId: String(result.insertId) }, "refused keyless claim was taken over");
  return { refused: true };
}

// withdraw: held (its holder's own attempt) -> deleted -------------------------------------------------------------

/**
 * The holder of a record that moved nothing deletes it: a keyless claim refused by the read sent with its INSERT
 * (the header is required), or work that declined (WorkResult). Fenced on the holder's attempt under a lease:
 * once anyone else took it over (its lease ended first), it is theirs to finish, and a released record (an
 * unknown gateway outcome) is never withdrawn; either way this matches no row.
 */
export function withdrawStatement(held: { id: bigint; attempt: number }): Statement {
  return {
    sql: `DELETE FROM idempotent_requests
           WHERE id = ? AND attempt = ? AND state = 'in_progress' AND lease_expires_at IS NOT NULL`,
    values: [held.id, held.attempt],
  };
}

/**
 * For work that writes rows of the operation's own in a transaction of its own (a refund's hold): read first in
 * it, under a share lock, it sets `into` to 1 only while the record is still in progress under this attempt, and
 * keeps it so until the commit. A stalled attempt's writes then cannot outlive a take-over, a write-off or a
 * withdrawal of its record (after which a new record of the key would call the gateway under another key).
 */
export const attemptFence = (into: string) => ({
  sql: `SELECT COUNT(*) INTO ${into} FROM idempotent_requests
          WHERE id = ? AND attempt = ? AND state = 'in_progress' LOCK IN SHARE MODE`,
  values: (held: { id: bigint; attempt: number }) => [held.id, held.attempt],
});

/** Withdraws the record this process holds; false when someone else moved it first. */
export async function withdraw(record: IdempotencyRecord): Promise<boolean> {
  return (await retryOnLockConflict(() => execute(withdrawStatement(record)))) === 1;
}

// take: released or lease_expired -> held, attempt + 1 -------------------------------------------------------------

/** The key lives on for its whole lifetime from now: a retry after many hours is still the same operation. */
export function takeStatement(record: IdempotencyRecord, { leaseMs, ttlMs }: Timing, taker: Taker): Statement {
  return {
    sql: `UPDATE idempotent_requests
             SET attempt = attempt + 1, lease_expires_at = ${DB_LATER}, updated_at = ${DB_NOW},
                 expires_at = GREATEST(expires_at, ${DB_LATER}),
                 last_attempt_at = ${taker === "retry" ? DB_NOW : "last_attempt_at"}
           WHERE id = ? AND attempt = ? AND state = 'in_progress'
             AND (lease_expires_at IS NULL OR lease_expires_at <= ${DB_NOW})`,
    values: [micros(leaseMs), micros(ttlMs), record.id, record.attempt],
  };
}

/** The record takeStatement leaves, sent at `sentAt`. */
export function afterTake(record: IdempotencyRecord, sentAt: Date, taker: Taker, t = timing): IdempotencyRecord {
  return {
    ...record,
    attempt: record.attempt + 1,
    phase: { name: "held", leaseExpiresAt: leaseFrom(sentAt, t) },
    lastAttemptAt: taker === "retry" ? sentAt : record.lastAttemptAt,
    updatedAt: sentAt,
    expiresAt: lifetimeFrom(record, sentAt, t),
  };
}

/** The record, held by this process under the next attempt; null when someone else moved it first. */
export async function take(record: IdempotencyRecord, now: Date, taker: Taker): Promise<IdempotencyRecord | null> {
  const changed = await retryOnLockConflict(() => execute(takeStatement(record, timing, taker)));
  if (changed !== 1) return null;
  const taken = afterTake(record, now, taker);
  noted(taken, "taken_over", taker, now);
  return taken;
}

// renew: held -> held, a new lease for the same attempt ------------------------------------------------------------

/**
 * The holder (same attempt) extends its lease before starting work it could not finish in time. Work that calls
 * the gateway (`retry`) then calls it under the new lease's deadline: its attempt time moves with it, as a take's.
 */
export function renewStatement(held: { id: bigint; attempt: number }, { leaseMs }: Timing, taker: Taker): Statement {
  return {
    sql: `UPDATE idempotent_requests SET lease_expires_at = ${DB_LATER}, updated_at = ${DB_NOW},
                 last_attempt_at = ${taker === "retry" ? DB_NOW : "last_attempt_at"}
           WHERE id = ? AND attempt = ? AND state = 'in_progress' AND lease_expires_at IS NOT NULL`,
    values: [micros(leaseMs), held.id, held.attempt],
  };
}

/** The record renewStatement leaves, sent at `sentAt`. */
export function afterRenew(record: IdempotencyRecord, sentAt: Date, taker: Taker, t = timing): IdempotencyRecord {
  return {
    ...record,
    phase: { name: "held", leaseExpiresAt: leaseFrom(sentAt, t) },
    lastAttemptAt: taker === "retry" ? sentAt : record.lastAttemptAt,
    updatedAt: sentAt,
  };
}

/** A fresh lease for the holder; null when the attempt was superseded. */
export async function renew(record: IdempotencyRecord, now: Date, taker: Taker): Promise<IdempotencyRecord | null> {
  const changed = await retryOnLockConflict(() => execute(renewStatement(record, timing, taker)));
  return changed === 1 ? afterRenew(record, now, taker) : null;
}

// release: held -> released (the holder did not learn the outcome) ------------------------------------------------

export function releaseStatement(held: { id: bigint; attempt: number }): Statement {
  return {
    sql: `UPDATE idempotent_requests SET lease_expires_at = NULL, updated_at = ${DB_NOW}
           WHERE id = ? AND attempt = ? AND state = 'in_progress'`,
    values: [held.id, held.attempt],
  };
}

/**
 * Gives the claim back (fenced by the attempt; a no-op once someone else took it). Its holder keeps no record of
 * it: whoever comes next reads it. `why` is for the timeline: the gateway's outcome was unknown, or the work failed.
 */
export async function release(record: IdempotencyRecord, why: "outcome unknown" | "error"): Promise<void> {
  const changed = await retryOnLockConflict(() => execute(releaseStatement(record)));
  if (changed === 1) noted(record, "released", why);
}

// complete: held -> complete, with the work's rows ----------------------------------------------------------------

/**
 * The holder (same attempt) stores the answer. Sent in one transaction with the rows the work writes, before them
 * (it locks the record first), so that the answer and those rows are never apart.
 */
export function completeStatement(
  held: { id: bigint; attempt: number },
  response: StoredResponse,
  finishedBy: FinishedBy,
  { ttlMs }: Timing,
): Statement {
  return {
    sql: `UPDATE idempotent_requests
             SET state = 'complete', response_status = ?, response_body = ?, response_request_id = ?, finished_by = ?,
                 lease_expires_at = NULL, updated_at = ${DB_NOW}, expires_at = GREATEST(expires_at, ${DB_LATER})
           WHERE id = ? AND attempt = ? AND state = 'in_progress'`,
    values: [
      response.status,
      response.body,
      response.requestId ?? null,
      finishedBy,
      micros(ttlMs),
      held.id,
      held.attempt,
    ],
  };
}

/** The record completeStatement leaves, sent at `sentAt`. */
export function afterComplete(
  record: IdempotencyRecord,
  response: StoredResponse,
  finishedBy: FinishedBy,
  sentAt: Date,
  t = timing,
): IdempotencyRecord {
  return {
    ...record,
    phase: { name: "complete", finishedBy, response },
    updatedAt: sentAt,
    expiresAt: lifetimeFrom(record, sentAt, t),
  };
}

/**
 * At most half the pool completes records at once. Completions arrive in bursts (gateway answers come back
 * together), and a burst that took every connection would make the claims and replays behind it wait, which are
 * what retrying clients wait for. The rest of a burst waits here, in memory, not in the pool.
 */
const completionSlots = pLimit(Math.max(1, Math.floor(env.DATABASE_POOL_SIZE / 2)));

/**
 * Stores the answer and the work's rows in ONE transaction, so that there is never one without the other. It
 * commits only if the record is still this attempt's and every write landed. The record it left, or null when
 * another attempt finished or took the record first (then nothing was written).
 */
export async function complete(
  record: IdempotencyRecord,
  response: StoredResponse,
  writes: Statement[],
  finishedBy: FinishedBy,
): Promise<IdempotencyRecord | null> {
  // The completion first, as the fence (it must match this attempt; every write must change rows): its UPDATE
  // takes the record's X lock before the work's rows, whose foreign keys would otherwise take an S lock on it
  // and deadlock two completions of one record on the S-to-X upgrade.
  const statements = [completeStatement(record, response, finishedBy, timing), ...writes];
  const sentAt = new Date();
  try {
    const committed = await completionSlots(() => retryOnLockConflict(() => atomically(statements)));
    if (!committed) return null;
    noted(record, "completed", `${finishedBy} ${response.status}`);
    return afterComplete(record, response, finishedBy, sentAt);
  } catch (error) {
    // A row of the work already exists (its unique key): another attempt wrote it.
    if (isDuplicateKeyError(error)) return null;
    throw error;
  }
}

// correct: complete (abandoned) -> complete (reconciled), the gateway having contradicted the write-off -----------

/**
 * The write-off's stored answer becomes what the gateway did after all (lifecycle.ts, correct): fenced on the
 * write-off itself, for a transaction that writes the operation's row beside it.
 */
export function correctWriteOffStatement(record: { id: bigint }, response: StoredResponse): Statement {
  return {
    sql: `UPDATE idempotent_requests
             SET finished_by = 'reconciled', response_status = ?, response_body = ?, response_request_id = NULL,
                 updated_at = ${DB_NOW}
           WHERE id = ? AND state = 'complete' AND finished_by = 'abandoned'`,
    values: [response.status, response.body, record.id],
  };
}

// expire: complete, past its lifetime -> deleted -------------------------------------------------------------------

export function expireStatement(record: IdempotencyRecord): Statement {
  return {
    sql: `DELETE FROM idempotent_requests WHERE id = ? AND state = 'complete' AND expires_at <= ${DB_NOW}`,
    values: [record.id],
  };
}

/** Deletes a complete record past its lifetime (a no-op for anything else), so its key can start a new operation. */
export async function expire(record: IdempotencyRecord): Promise<void> {
  await retryOnLockConflict(() => execute(expireStatement(record)));
}

/** expire, in bulk: the pruner's batch, oldest first along (state, expires_at). */
export function pruneBatchStatement(batchSize: number): Statement {
  // The batch is chosen through the prune index by name, then deleted by primary key: MariaDB has no index hint on
  // a DELETE, and left to itself it has picked the sweep index (state, updated_at), which at scale reads every
  // complete record and sorts them. A complete record leaves its state only by being deleted, so the batch holds.
  return {
    sql: `DELETE r FROM (SELECT id FROM idempotent_requests FORCE INDEX (idempotent_requests_prune_idx)
                          WHERE state = 'complete' AND expires_at < ${DB_NOW} ORDER BY expires_at LIMIT ?) batch
            STRAIGHT_JOIN idempotent_requests r ON r.id = batch.id`,
    values: [batchSize],
  };
}

/** One batch of the pruner (complete records past their lifetime, by the database's clock); how many went. */
export async function pruneBatch(batchSize: number): Promise<number> {
  return execute(pruneBatchStatement(batchSize));
}

// Not a transition: the note of a request refused for reusing a key (422), for the dashboard ---------------------

export async function recordKeyReuse(existing: IdempotencyRecord, claim: ClaimInput) {
  await db.keyReuseAttempt.create({
    data: {
      idempotencyKey: keyToBytes(claim.idempotencyKey!),
      route: claim.route,
      apiClientId: claim.apiClientId,
      ownerApiClientId: existing.apiClientId,
      crossClient: claim.apiClientId !== existing.apiClientId,
      storedHash: existing.requestHash,
      attemptedHash: claim.requestHash,
      // What it sent, only when the key is its own: another client's request is never shown as the owner's.
      attemptedFields: claim.apiClientId === existing.apiClientId && claim.fields ? JSON.stringify(claim.fields) : null,
    },
  });
}
