import { hostname } from "node:os";
import { env } from "~/env";
import { db } from "~/server/db";
import { pruneExpired } from "./pruneExpired";
import { reapAbandoned } from "./reapAbandoned";

/** One sweep: reap abandoned records, prune expired ones, record the run for the dashboard. */
export async function runSweep(options: { reapAfterMs?: number } = {}) {
  const run = await db.sweepRun.create({ data: { instance: `${hostname()}:${process.pid}`, startedAt: new Date() } });
  try {
    const { reaped, reconciled } = await reapAbandoned({ olderThanMs: options.reapAfterMs });
    // Half the interval at most: the next sweep's reaping must not wait on a backlog.
    const pruned = await pruneExpired({ budgetMs: env.SWEEP_INTERVAL_MS / 2 });
    return await db.sweepRun.update({ where: { id: run.id }, data: { finishedAt: new Date(), reaped, reconciled, pruned } });
  } catch (error) {
    await db.sweepRun.update({ where: { id: run.id }, data: { finishedAt: new Date(), error: String(error) } }).catch(() => {});
    throw error;
  }
}
