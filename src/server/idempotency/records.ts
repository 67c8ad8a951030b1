/**
 * The persistence of idempotency records: the statements of lifecycle.ts sent
 * to the database, and the reads. Private to this folder; the rest of the app
 * goes through runIdempotent.ts and recovery.ts (Powertools' layering: public
 * operations over a protected persistence layer).
 */
import pLimit from "p-limit";
import { env } from "~/env";
import { log } from "~/server/observability/log";
import {
  atomically,
  db,
  execute,
  insertReturningId,
  insertThenRead,
  isDuplicateKeyError,
  isLockConflictError,
  queryRows,
  retryOnLockConflict,
  type Statement,
} from "~/server/db";
import {
  byKeyStatement,
  claimReadStatement,
  claimStatement,
  completeStatement,
  decodeRecord,
  expireStatement,
  ImpossibleRecordError,
  keyToBytes,
  pruneBatchStatement,
  releaseStatement,
  renewStatement,
  takeStatement,
  unfinishedStatement,
  withdrawStatement,
  type FinishedBy,
  type IdempotencyRecord,
  type RecordRow,
  type Taker,
  type Timing,
} from "./lifecycle";
import { noteEvent } from "./events";
import type { ClaimInput, StoredResponse } from "./types";

export const timing: Timing = {
  leaseMs: env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS,
  ttlMs: env.IDEMPOTENCY_KEY_TTL_HOURS * 3_600_000,
};

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

/** When a record completed now expires: the completion keeps a later expiry, or gives it the full lifetime. */
export const expiryAfterCompletion = (record: IdempotencyRecord, now = Date.now()) =>
  new Date(Math.max(record.expiresAt.getTime(), now + timing.ttlMs));

/** When work under a hold must be done: a lease margin before the lease ends. */
export const deadlineOf = (leaseExpiresAt: Date) => new Date(leaseExpiresAt.getTime() - env.LEASE_MARGIN_MS);

/**
 * The database starts a lease when it runs the statement, which is after this
 * process sent it: a lease measured here from the moment of sending ends no
 * later than the database's, whatever either clock says. That is the lease
 * end this process works to (deadlineOf); the database's own is what others
 * compare against.
 */
const leaseFrom = (sentAt: Date) => new Date(sentAt.getTime() + timing.leaseMs);

/**
 * INSERTs the record, held by this process: the claim. One autocommitted
 * statement, so there is no moment at which the row exists but this process
 * does not know it owns it. When the key is taken (the unique index says so),
 * the record that holds it, read in the same round trip, right after the
 * INSERT failed (null if it was deleted in between: expired). A keyless record
 * (NULL key) never meets the unique index and needs no read.
 */
export async function claim(
  claim: ClaimInput,
  now: Date,
): Promise<{ claimed: IdempotencyRecord } | { found: IdempotencyRecord | null } | { refused: true } | Conflicted> {
  if (claim.idempotencyKey === null) return claimKeyless(claim, now);
  const insert = claimStatement(claim, timing);
  const result = await insertThenRead<RecordRow>(insert, claimReadStatement(claim.idempotencyKey, claim.route));
  if ("insertId" in result) return { claimed: heldClaim(claim, result.insertId, now) };
  if (!isDuplicateKeyError(result.insertError)) return conflictedOrThrow(result.insertError);
  return { found: result.rows[0] ? decodeRecord(result.rows[0], now) : null };
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
 * A keyless claim, and its admission (the rollout mode) read in the same round
 * trip. Refused, the claim is withdrawn together with the refusal's writes (its
 * count), in one transaction.
 *
 * If the read fails, the request fails, and its claim is withdrawn where that
 * can be done; where not, the record is left held, like a crash's, and the
 * sweeper finishes it (it asks the gateway, which was asked nothing, and writes
 * it off as abandoned). If the withdrawal does not land (its fence matched
 * nothing: this process stalled past its lease and the sweeper took the record
 * over; or it failed), the request is refused all the same, and is counted when
 * the sweeper finishes its record: as an accepted keyless request, not a refused
 * one, the one count this rare path gets wrong (conservatively: it says keyless
 * traffic was accepted, which only delays enforcing). Both are logged.
 */
async function claimKeyless(
  claim: ClaimInput,
  now: Date,
): Promise<{ claimed: IdempotencyRecord } | { refused: true } | Conflicted> {
  const insert = claimStatement(claim, timing);
  const { admission } = claim;
  if (!admission) {
    const inserted = await insertReturningId(insert).catch(conflictedOrThrow);
    return typeof inserted === "bigint" ? { claimed: heldClaim(claim, inserted, now) } : inserted;
  }
  const result = await insertThenRead<unknown>(insert, admission.read);
  if ("insertError" in result) return conflictedOrThrow(result.insertError);
  const rows =
    result.rows ??
    (await queryRows<unknown>(admission.read).catch(async (error: unknown) => {
      // Not known whether it may go on: nothing is done under the claim, and the request fails (503 or 500). The
      // claim is withdrawn first where it can be, so that no write-off for a request never worked is left.
      await execute(withdrawStatement({ id: result.insertId })).catch(() => {});
      throw error;
    }));
  if (admission.admits(rows)) return { claimed: heldClaim(claim, result.insertId, now) };
  const withdrawal = [withdrawStatement({ id: result.insertId }), ...admission.refusalWrites()];
  const withdrawn = await retryOnLockConflict(() => atomically(withdrawal)).catch((error: unknown) => {
    log.warn({ err: error, requestId: String(result.insertId) }, "refused keyless claim not withdrawn");
    return null;
  });
  if (withdrawn === false) log.warn({ requestId: String(result.insertId) }, "refused keyless claim was taken over");
  return { refused: true };
}

/** The record this process just inserted, as the claim wrote it (noted on the key's timeline). */
function heldClaim(claim: ClaimInput, id: bigint, now: Date): IdempotencyRecord {
  const { idempotencyKey, route, apiClientId, requestHash } = claim;
  const record: IdempotencyRecord = {
    id,
    idempotencyKey,
    route,
    apiClientId,
    requestHash,
    attempt: 1,
    phase: { name: "held", leaseExpiresAt: leaseFrom(now) },
    lastAttemptAt: now,
    createdAt: now,
    updatedAt: now,
    expiresAt: new Date(now.getTime() + timing.ttlMs),
  };
  noted(record, "claimed", null, now);
  return record;
}

/** The record of a key on a route, read through the driver in one round trip (the replay path). */
export async function findByKey(idempotencyKey: string, route: string, now: Date): Promise<IdempotencyRecord | null> {
  const [row] = await queryRows<RecordRow>(byKeyStatement(idempotencyKey, route));
  return row ? decodeRecord(row, now) : null;
}

export async function findById(id: bigint, now = new Date()): Promise<IdempotencyRecord | null> {
  const row = await db.idempotentRequest.findUnique({ where: { id } });
  return row ? decodeRecord(row, now) : null;
}

/** take: the record, held by this process under the next attempt; null when someone else moved it first. */
export async function take(record: IdempotencyRecord, now: Date, taker: Taker): Promise<IdempotencyRecord | null> {
  const changed = await retryOnLockConflict(() => execute(takeStatement(record, timing, taker)));
  if (changed !== 1) return null;
  noted({ ...record, attempt: record.attempt + 1 }, "taken_over", taker, now);
  return {
    ...record,
    attempt: record.attempt + 1,
    phase: { name: "held", leaseExpiresAt: leaseFrom(now) },
    lastAttemptAt: taker === "retry" ? now : record.lastAttemptAt,
    updatedAt: now,
    expiresAt: new Date(Math.max(record.expiresAt.getTime(), now.getTime() + timing.ttlMs)),
  };
}

/** renew: a fresh lease for the holder; null when the attempt was superseded. */
export async function renew(record: IdempotencyRecord, now: Date): Promise<IdempotencyRecord | null> {
  const changed = await retryOnLockConflict(() => execute(renewStatement(record, timing)));
  if (changed !== 1) return null;
  return { ...record, phase: { name: "held", leaseExpiresAt: leaseFrom(now) }, updatedAt: now };
}

/**
 * release: gives the claim back (fenced by the attempt; a no-op once someone else took it). `why` is for the
 * timeline: the gateway's outcome was unknown, or the work failed with an error.
 */
export async function release(record: IdempotencyRecord, why: "outcome unknown" | "error"): Promise<void> {
  const changed = await retryOnLockConflict(() => execute(releaseStatement(record)));
  if (changed === 1) noted(record, "released", why);
}

/**
 * At most half the pool completes records at once. Completions arrive in bursts
 * (gateway answers come back together), and a burst that took every connection
 * would make the claims and replays behind it wait, which are what retrying
 * clients wait for. The rest of a burst waits here, in memory, not in the pool.
 */
const completionSlots = pLimit(Math.max(1, Math.floor(env.DATABASE_POOL_SIZE / 2)));

/**
 * complete: stores the answer and the work's rows in ONE transaction, so that
 * there is never one without the other. It commits only if the record is still
 * this attempt's and every write landed. False when another attempt finished or
 * took the record first (then nothing was written).
 */
export async function complete(
  record: IdempotencyRecord,
  response: StoredResponse,
  writes: Statement[],
  finishedBy: FinishedBy,
): Promise<boolean> {
  // The completion first, as the fence (it must match this attempt; every write must change rows): its UPDATE
  // takes the record's X lock before the work's rows, whose foreign keys would otherwise take an S lock on it
  // and deadlock two completions of one record on the S-to-X upgrade.
  const statements = [completeStatement(record, response, finishedBy, timing), ...writes];
  try {
    const committed = await completionSlots(() => retryOnLockConflict(() => atomically(statements)));
    if (committed) noted(record, "completed", `${finishedBy} ${response.status}`);
    return committed;
  } catch (error) {
    // A row of the work already exists (its unique key): another attempt wrote it.
    if (isDuplicateKeyError(error)) return false;
    throw error;
  }
}

/** expire: deletes a complete record past its lifetime (no-op for anything else). */
export async function expire(record: IdempotencyRecord): Promise<void> {
  await retryOnLockConflict(() => execute(expireStatement(record)));
}

/** One batch of the pruner (complete records past their lifetime, by the database's clock); how many went. */
export async function pruneBatch(batchSize: number): Promise<number> {
  return execute(pruneBatchStatement(batchSize));
}

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

/** Records nobody is finishing, oldest first (see lifecycle.unfinishedStatement). */
export async function findUnfinished(now: Date, idleMs: number, limit: number): Promise<IdempotencyRecord[]> {
  const { sql, values } = unfinishedStatement(idleMs, limit);
  const rows = await db.$queryRawUnsafe<RecordRow[]>(sql, ...values);
  const records: IdempotencyRecord[] = [];
  for (const row of rows) {
    try {
      records.push(decodeRecord({ ...row, attempt: Number(row.attempt) }, now));
    } catch (error) {
      // A row no transition could have produced (a hand edit, a bad restore) is for people to look at; it
      // must not stop the sweeper from finishing every other record behind it in the batch.
      if (!(error instanceof ImpossibleRecordError)) throw error;
      log.error({ err: error, requestId: String(row.id) }, "sweep: skipping a record in an impossible state");
    }
  }
  return records;
}
