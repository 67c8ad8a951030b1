import { db } from "~/server/db";
import { answersWithoutTheirChargeStatement, isExpired, phaseWhere, type IdempotencyRecord } from "./lifecycle";
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
  | { kind: "in_progress"; since: Date }
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
  return record.phase.name === "complete"
    ? { kind: "complete", response: record.phase.response }
    : { kind: "in_progress", since: record.createdAt };
}

/** Complete records of `route` answered 201 since `since` whose answer names no charge of theirs (ids). */
export async function answersWithoutTheirCharge(route: string, since: Date): Promise<bigint[]> {
  const { sql, values } = answersWithoutTheirChargeStatement(route, since);
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
