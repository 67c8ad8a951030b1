import { env } from "~/env";
import { db } from "~/server/db";

/** Key-reuse attempts and sweep runs are dashboard history; kept longer than keys. */
const HISTORY_RETENTION_DAYS = 30;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Deletes in small batches, each its own short statement, so that row locks are
 * held briefly and concurrent inserts are never blocked for long. MariaDB's
 * DELETE ... ORDER BY ... LIMIT walks the index from the oldest row.
 */
async function deleteInBatches(sql: string, cutoff: Date, batchSize: number, maxBatches: number): Promise<number> {
  let total = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const deleted = await db.$executeRawUnsafe(sql, cutoff, batchSize);
    total += deleted;
    if (deleted < batchSize) break;
    await sleep(5);
  }
  return total;
}

export async function pruneExpired({
  batchSize = env.PRUNE_BATCH_SIZE,
  maxBatches = 10_000,
  now = new Date(),
}: { batchSize?: number; maxBatches?: number; now?: Date } = {}): Promise<number> {
  const historyCutoff = new Date(now.getTime() - HISTORY_RETENTION_DAYS * 86_400_000);
  const pruned = await deleteInBatches(
    "DELETE FROM idempotent_requests WHERE expires_at < ? ORDER BY expires_at LIMIT ?",
    now,
    batchSize,
    maxBatches,
  );
  await deleteInBatches("DELETE FROM idempotency_key_reuses WHERE created_at < ? ORDER BY created_at LIMIT ?", historyCutoff, batchSize, maxBatches);
  await deleteInBatches("DELETE FROM sweep_runs WHERE started_at < ? ORDER BY started_at LIMIT ?", historyCutoff, batchSize, maxBatches);
  return pruned;
}
