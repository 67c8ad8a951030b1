import { db, driverErrorCode } from "~/server/db";
import {
  answersWithoutTheirRowStatement,
  decodeRecord,
  isExpired,
  keyPrefixStatement,
  phaseWhere,
  recordCountStatement,
  recordListStatement,
  type IdempotencyRecord,
  type RecordFilter,
  type RecordRow,
} from "./lifecycle";
import * as records from "./records";
import type { StoredResponse } from "./types";

/** One batch of expired complete records deleted (the pruner paces the batches); how many. */
export function pruneExpiredBatch(batchSize: number): Promise<number> {
  return records.pruneBatch(batchSize);
}

/** A record by id, decoded (the ledger and the dashboard read records this way). */
export function findRecord(id: bigint): Promise<IdempotencyRecord | null> {
  return records.findById(id);
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
      ? await records.findById(operation.requestId, now)
      : await records.findByKey(operation.idempotencyKey, operation.route, now);
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

/** Complete records of `route` answered 201 since `since` whose answer names no row of theirs in `table` (ids). */
export async function answersWithoutTheirRow(route: string, table: "charges" | "refunds", since: Date) {
  const { sql, values } = answersWithoutTheirRowStatement(route, table, since);
  return (await db.$queryRawUnsafe<{ id: bigint }[]>(sql, ...values)).map((r) => r.id);
}

/** Records of `route` (every route when omitted) still in progress: at most `limit` ids. */
export async function recordsInProgress(route?: string, limit = 1000): Promise<bigint[]> {
  const rows = await db.idempotentRequest.findMany({
    where: { ...phaseWhere.in_progress, ...(route ? { route } : {}) },
    select: { id: true },
    take: limit,
  });
  return rows.map((r) => r.id);
}

/** How many records are in progress (the dashboard's sweep status). */
export function countInProgress(): Promise<number> {
  return db.idempotentRequest.count({ where: phaseWhere.in_progress });
}

/** A record as the dashboard lists it: decoded, with the customer its request named. */
export type ListedRecord = IdempotencyRecord & { customerId: string | null };

type ListedRow = RecordRow & { customerId: string | null };
const listed = (rows: ListedRow[], now: Date): ListedRecord[] =>
  rows.map((row) => ({ ...decodeRecord({ ...row, attempt: Number(row.attempt) }, now), customerId: row.customerId }));

/** The dashboard's request log: a page of records, newest first (see lifecycle.recordListStatement). */
export async function listRecords(
  filter: RecordFilter,
  page: { before?: { createdAt: Date; id: bigint } | null; limit: number },
  now = new Date(),
): Promise<ListedRecord[]> {
  const { sql, values } = recordListStatement(filter, page, now);
  return listed(await db.$queryRawUnsafe<ListedRow[]>(sql, ...values), now);
}

/**
 * How many records match the filter, up to `cap` + 1; null when counting would
 * take longer than `budgetMs`. Filters that no one index serves together (a
 * client and a status, say) are checked row by row, and a sparse combination
 * could read a big client's every row on each refresh: the budget stops that.
 * 100 ms, so that a count that gives up still answers within the dashboard's
 * 150 ms target (bench/README.md, dashboard).
 */
export async function countRecords(
  filter: RecordFilter,
  cap: number,
  budgetMs = 100,
  now = new Date(),
): Promise<number | null> {
  const { sql, values } = recordCountStatement(filter, cap, now);
  try {
    const [row] = await db.$queryRawUnsafe<{ n: bigint }[]>(
      `SET STATEMENT max_statement_time = ${budgetMs / 1000} FOR ${sql}`,
      ...values,
    );
    return Number(row?.n ?? 0);
  } catch (error) {
    if (driverErrorCode(error) === QUERY_INTERRUPTED) return null;
    throw error;
  }
}

/** MariaDB's "query execution was interrupted (max_statement_time exceeded)". */
const QUERY_INTERRUPTED = 1969;

/** Records whose key starts with `prefix`, in key order. */
export async function recordsWithKeyPrefix(prefix: string, limit: number, now = new Date()): Promise<ListedRecord[]> {
  const { sql, values } = keyPrefixStatement(prefix, limit);
  return listed(await db.$queryRawUnsafe<ListedRow[]>(sql, ...values), now);
}
