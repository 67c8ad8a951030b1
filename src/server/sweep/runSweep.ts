import { hostname } from "node:os";
import { env } from "~/env";
import { db } from "~/server/db";
import { reconcileIfDue } from "~/server/ledger/schedule";
import { pruneExpired } from "./pruneExpired";
import { reapAbandoned } from "./reapAbandoned";

/**
 * One sweep: finish records nobody is finishing, prune expired ones, record the
 * run for the dashboard; and, every RECONCILE_INTERVAL_MS, reconcile the ledger
 * with the gateway's charge list (its own run record).
 */
export async function runSweep(options: { reapAfterMs?: number; reconcile?: boolean } = {}) {
  const run = await db.sweepRun.create({ data: { instance: `${hostname()}:${process.pid}`, startedAt: new Date() } });
  try {
    const { reaped, reconciled } = await reapAbandoned({ olderThanMs: options.reapAfterMs });
    // Half the interval at most: the next sweep's reaping must not wait on a backlog.
    const pruned = await pruneExpired({ budgetMs: env.SWEEP_INTERVAL_MS / 2 });
    const finished = await db.sweepRun.update({ where: { id: run.id }, data: { finishedAt: new Date(), reaped, reconciled, pruned } });
    if (options.reconcile ?? true) await reconcileIfDue();
    return finished;
  } catch (error) {
    await db.sweepRun.update({ where: { id: run.id }, data: { finishedAt: new Date(), error: String(error) } }).catch(() => {});
    throw error;
  }
}
