/**
 * The protocol's reads of records: by key (the replay path), by id, the unfinished ones (the sweeper's), what a
 * client may learn of its own operation, and what is still in progress (the ledger's). Each decoded by the
 * lifecycle; none decides ownership, which only the claim's INSERT or a fenced take can win (records.ts).
 */
import { db, queryRows, type Statement } from "~/server/db";
import { log } from "~/server/observability/log";
import { DB_NOW, micros } from "./dbClock";
import {
  decodeRecord,
  ImpossibleRecordError,
  isExpired,
  RECORD_COLUMNS,
  type IdempotencyRecord,
  type RecordRow,
  type StoredResponse,
} from "./lifecycle";

/** The record of a key on a route (the unique index). What it finds decides the answer (runIdempotent.answerFor). */
export function byKeyStatement(idempotencyKey: string, route: string): Statement {
  return {
    sql: `SELECT ${RECORD_COLUMNS} FROM idempotent_requests WHERE idempotency_key = ? AND route = ?`,
    values: [Buffer.from(idempotencyKey, "latin1"), route],
  };
}

/** The record of a key on a route, read through the driver in one round trip (the replay path). */
export async function findByKey(idempotencyKey: string, route: string, now: Date): Promise<IdempotencyRecord | null> {
  const [row] = await queryRows<RecordRow>(byKeyStatement(idempotencyKey, route));
  return row ? decodeRecord(row, now) : null;
}

/** A record by id, decoded (the ledger and the dashboard read records this way too). */
export async function findById(id: bigint, now = new Date()): Promise<IdempotencyRecord | null> {
  const row = await db.idempotentRequest.findUnique({ where: { id } });
  return row ? decodeRecord(row, now) : null;
}

/**
 * The records nobody is finishing, oldest first: in progress, first attempted at least `dueAfterMs` ago, and not
 * under a live lease (released, or their holder's lease ran out). By the first attempt, never by the last touch:
 * a client polling or retrying moves `updated_at`, and must not postpone its operation's answer. Least recently
 * touched first along (state, updated_at), so that records the gateway cannot settle yet (each released again by
 * the sweep that asked) take turns with the rest instead of filling every batch.
 */
export function unfinishedStatement(dueAfterMs: number, limit: number): Statement {
  return {
    sql: `SELECT ${RECORD_COLUMNS} FROM idempotent_requests
           WHERE state = 'in_progress' AND created_at <= DATE_SUB(${DB_NOW}, INTERVAL ? MICROSECOND)
             AND (lease_expires_at IS NULL OR lease_expires_at <= ${DB_NOW})
           ORDER BY updated_at LIMIT ?`,
    values: [micros(dueAfterMs), limit],
  };
}

export async function findUnfinished(now: Date, dueAfterMs: number, limit: number): Promise<IdempotencyRecord[]> {
  const { sql, values } = unfinishedStatement(dueAfterMs, limit);
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

/** What a client can learn about its own operation without resending it. */
export type OperationState =
  | { kind: "complete"; response: StoredResponse }
  /** A request is working on it now. */
  | { kind: "in_progress"; since: Date }
  /** Nobody is working on it (released after an unknown outcome, or its holder's lease ran out). */
  | { kind: "unfinished"; since: Date; record: IdempotencyRecord }
  /** No such key, not this client's, or past its lifetime: nothing is revealed. */
  | { kind: "unknown" };

export async function findOperation(
  operation: ({ idempotencyKey: string } | { requestId: bigint }) & { route: string; apiClientId: number },
): Promise<OperationState> {
  const now = new Date();
  const record =
    "requestId" in operation
      ? await findById(operation.requestId, now)
      : await findByKey(operation.idempotencyKey, operation.route, now);
  const theirs = record && record.apiClientId === operation.apiClientId && record.route === operation.route;
  if (!record || !theirs || isExpired(record, now)) return { kind: "unknown" };
  switch (record.phase.name) {
    case "complete":
      return { kind: "complete", response: record.phase.response };
    case "held":
      return { kind: "in_progress", since: record.createdAt };
    case "released":
    case "lease_expired":
      return { kind: "unfinished", since: record.createdAt, record };
  }
}

const inProgress = { state: "in_progress" as const };

/** Records of `route` (every route when omitted) still in progress: at most `limit` ids. */
export async function recordsInProgress(route?: string, limit = 1000): Promise<bigint[]> {
  const rows = await db.idempotentRequest.findMany({
    where: { ...inProgress, ...(route ? { route } : {}) },
    select: { id: true },
    take: limit,
  });
  return rows.map((r) => r.id);
}

/** How many records are in progress (the dashboard's sweep status). */
export function countInProgress(): Promise<number> {
  return db.idempotentRequest.count({ where: inProgress });
}
