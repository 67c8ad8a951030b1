import type { IdempotencyRecord } from "./lifecycle";
import * as records from "./records";

/** One batch of expired complete records deleted (the pruner paces the batches); how many. */
export function pruneExpiredBatch(cutoff: Date, batchSize: number): Promise<number> {
  return records.pruneBatch(cutoff, batchSize);
}

/** A record by id, decoded (the ledger and the dashboard read records this way). */
export function findRecord(id: bigint): Promise<IdempotencyRecord | null> {
  return records.findById(id);
}
