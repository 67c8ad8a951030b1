import { isExpired, type IdempotencyRecord } from "./lifecycle";
import * as records from "./records";
import type { StoredResponse } from "./types";

/** One batch of expired complete records deleted (the pruner paces the batches); how many. */
export function pruneExpiredBatch(cutoff: Date, batchSize: number): Promise<number> {
  return records.pruneBatch(cutoff, batchSize);
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

export async function findOperation(claim: { idempotencyKey: string; route: string; apiClientId: number }): Promise<OperationState> {
  const now = new Date();
  const record = await records.findByKey(claim.idempotencyKey, claim.route, now);
  if (!record || record.apiClientId !== claim.apiClientId || isExpired(record, now)) return { kind: "unknown" };
  return record.phase.name === "complete"
    ? { kind: "complete", response: record.phase.response }
    : { kind: "in_progress", since: record.createdAt };
}
