import { env } from "~/env";
import { execute } from "~/server/db";
import { pruneExpiredBatch } from "~/server/idempotency/maintenance";

/**
 * Key-reuse attempts, sweep and reconciliation runs are dashboard history; kept longer than keys. Gateway events
 * are kept past the gateway's redelivery (Stripe's: 3 days), so that a late redelivery is still known.
 */
const HISTORY_RETENTION_DAYS = 30;
const HISTORY = [
  ["idempotency_key_reuses", "created_at"],
  ["sweep_runs", "started_at"],
  ["reconciliation_runs", "started_at"],
  ["gateway_events", "received_at"],
] as const;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * After each batch the prune rests three times as long as the batch took, so it
 * uses at most a quarter of one database thread, and backs off on its own when the
 * database is busy with live traffic (batches take longer, pauses grow).
 */
const REST_PER_BATCH_TIME = 3;

/**
 * Deletes in small batches, each its own short statement, so that row locks are
 * held briefly and concurrent inserts are never blocked for long. MariaDB's
 * DELETE ... ORDER BY ... LIMIT walks the index from the oldest row.
 */
async function deleteInBatches(
  deleteBatch: (cutoff: Date, batchSize: number) => Promise<number>,
  cutoff: Date,
  batchSize: number,
  deadline: number,
): Promise<number> {
  let total = 0;
  while (performance.now() < deadline) {
    const started = performance.now();
    const deleted = await deleteBatch(cutoff, batchSize);
    total += deleted;
    if (deleted < batchSize) break;
    await sleep((performance.now() - started) * REST_PER_BATCH_TIME);
  }
  return total;
}

/** Old dashboard history, oldest first along its time index. */
const deleteOld = (table: string, column: string) => (cutoff: Date, batchSize: number) =>
  execute({ sql: `DELETE FROM ${table} WHERE ${column} < ? ORDER BY ${column} LIMIT ?`, values: [cutoff, batchSize] });

/**
 * Deletes expired records (complete ones only: the lifecycle's rule), then old
 * dashboard history. With `budgetMs` it stops after about that long and leaves
 * the rest to the next sweep, so that a large backlog never delays reaping.
 */
export async function pruneExpired({
  batchSize = env.PRUNE_BATCH_SIZE,
  budgetMs = Infinity,
  now = new Date(),
}: {
  batchSize?: number;
  budgetMs?: number;
  now?: Date;
} = {}): Promise<number> {
  const deadline = performance.now() + budgetMs;
  const historyCutoff = new Date(now.getTime() - HISTORY_RETENTION_DAYS * 86_400_000);
  // Records expire by the database's clock (the lifecycle's rule); history by this one, which is fine for it.
  const pruned = await deleteInBatches((_, size) => pruneExpiredBatch(size), now, batchSize, deadline);
  for (const [table, column] of HISTORY)
    await deleteInBatches(deleteOld(table, column), historyCutoff, batchSize, deadline);
  return pruned;
}
