import { hostname } from "node:os";
import { env } from "~/env";
import { db } from "~/server/db";
import { scanForDuplicates } from "~/server/customers/duplicates";
import { flushEvents, pruneEvents } from "~/server/idempotency/maintenance";
import { reconcileIfDue } from "~/server/ledger/schedule";
import { foldClosedHours } from "~/server/rollout/foldCounts";
import { pruneExpired } from "./pruneExpired";
import { reapAbandoned } from "./reapAbandoned";

/**
 * One sweep: finish records nobody is finishing, prune expired ones (and key
 * events older than twice a key's lifetime), record the run for the dashboard;
 * every RECONCILE_INTERVAL_MS, reconcile the ledger with the gateway's charge
 * list (its own run record); then look for possible duplicate charges among
 * those made since the last sweep, write this process's key events (a
 * `--once` sweeper exits right after), and fold the request counts of closed
 * hours (rollout/foldCounts.ts).
 */
export async function runSweep(options: { reapAfterMs?: number; reconcile?: boolean } = {}) {
  const run = await db.sweepRun.create({ data: { instance: `${hostname()}:${process.pid}`, startedAt: new Date() } });
  try {
    const { reaped, reconciled } = await reapAbandoned({ olderThanMs: options.reapAfterMs });
    // Half the interval at most: the next sweep's reaping must not wait on a backlog.
    const pruned = await pruneExpired({ budgetMs: env.SWEEP_INTERVAL_MS / 2 });
    const finished = await db.sweepRun.update({
      where: { id: run.id },
      data: { finishedAt: new Date(), reaped, reconciled, pruned },
    });
    if (options.reconcile ?? true) await reconcileIfDue();
    await scanForDuplicates();
    await pruneEvents(new Date(Date.now() - 2 * env.IDEMPOTENCY_KEY_TTL_HOURS * 3_600_000));
    await flushEvents();
    // Last: a fold that fails (it is retried next sweep) must not keep the steps above from running.
    await foldClosedHours({ budgetMs: env.SWEEP_INTERVAL_MS / 4 });
    return finished;
  } catch (error) {
    await db.sweepRun
      .update({ where: { id: run.id }, data: { finishedAt: new Date(), error: String(error) } })
      .catch(() => {});
    throw error;
  }
}
