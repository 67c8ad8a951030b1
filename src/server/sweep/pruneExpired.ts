import { env } from "~/env";
import { db } from "~/server/db";

/** Key-reuse attempts and sweep runs are dashboard history; kept longer than keys. */
const HISTORY_RETENTION_DAYS = 30;

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
async function deleteInBatches(sql: string, cutoff: Date, batchSize: number, deadline: number): Promise<number> {
  let total = 0;
  while (performance.now() < deadline) {
    const started = performance.now();
    const deleted = await db.$executeRawUnsafe(sql, cutoff, batchSize);
    total += deleted;
    if (deleted < batchSize) break;
    await sleep((performance.now() - started) * REST_PER_BATCH_TIME);
  }
  return total;
}

/**
 * Deletes expired records, then old dashboard history. With `budgetMs` it stops
 * after about that long and leaves the rest to the next sweep, so that a large
 * backlog never delays reaping.
 */
export async function pruneExpired({
  batchSize = env.PRUNE_BATCH_SIZE,
  budgetMs = Infinity,
  now = new Date(),
}: { batchSize?: number; budgetMs?: number; now?: Date } = {}): Promise<number> {
  const deadline = performance.now() + budgetMs;
  const historyCutoff = new Date(now.getTime() - HISTORY_RETENTION_DAYS * 86_400_000);
  const pruned = await deleteInBatches(
    "DELETE FROM idempotent_requests WHERE expires_at < ? ORDER BY expires_at LIMIT ?",
    now,
    batchSize,
    deadline,
  );
  await deleteInBatches("DELETE FROM idempotency_key_reuses WHERE created_at < ? ORDER BY created_at LIMIT ?", historyCutoff, batchSize, deadline);
  await deleteInBatches("DELETE FROM sweep_runs WHERE started_at < ? ORDER BY started_at LIMIT ?", historyCutoff, batchSize, deadline);
  return pruned;
}
