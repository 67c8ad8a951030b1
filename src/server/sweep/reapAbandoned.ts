import { env } from "~/env";
import { findUnfinished, finishUnfinished } from "~/server/idempotency";
import { settleRecord } from "~/server/moneyRoutes";
import { log } from "~/server/observability/log";

export type ReapResult = { reaped: number; reconciled: number; skipped: number };

/**
 * Finishes records that nobody is finishing: the process holding the claim
 * died (its lease ran out) or a released claim was never retried. Before giving
 * up on one it asks the gateway under the derived key: if the money moved, the
 * local charge is written and the record completes with the real 201
 * (reconciled); if it provably did not, and nothing can still be made, 500
 * request_abandoned (operations/finality.ts). `olderThanMs`: how long after its
 * first attempt a record is due (REAP_AFTER_MS; tests sweep sooner).
 *
 * Safe with several instances and with retries arriving meanwhile: a record is
 * taken over with a conditional UPDATE under the next attempt first, and only
 * the caller whose UPDATE matched goes on with it. Only what this sweep itself
 * finished is counted.
 */
export async function reapAbandoned({
  olderThanMs = env.REAP_AFTER_MS,
  batchSize = 100,
}: {
  olderThanMs?: number;
  batchSize?: number;
} = {}): Promise<ReapResult> {
  const result: ReapResult = { reaped: 0, reconciled: 0, skipped: 0 };
  for (const candidate of await findUnfinished(olderThanMs, batchSize)) {
    try {
      const finished = await finishUnfinished(candidate, (held) => settleRecord(held, olderThanMs));
      if (finished.kind === "finished") result[finished.finishedBy === "abandoned" ? "reaped" : "reconciled"] += 1;
      else result.skipped += 1; // lost to a retry or another sweeper, or the gateway cannot tell yet
    } catch (error) {
      // Gateway unreachable, say: the claim was given back and the next sweep tries again.
      const { apiClientId, idempotencyKey } = candidate;
      const record = { recordId: String(candidate.id), apiClientId, idempotencyKey };
      log.error({ ...record, err: error }, "sweep: could not finish a record; the next sweep tries again");
      result.skipped += 1;
    }
  }
  return result;
}
