import { hostname } from "node:os";
import { db } from "~/server/db";
import { pruneExpired } from "./pruneExpired";
import { reapAbandoned } from "./reapAbandoned";

/** One sweep: reap abandoned records, prune expired ones, record the run for the dashboard. */
export async function runSweep(options: { reapAfterMs?: number } = {}) {
  const run = await db.sweepRun.create({ data: { instance: `${hostname()}:${process.pid}`, startedAt: new Date() } });
  try {
    const { reaped, reconciled } = await reapAbandoned({ olderThanMs: options.reapAfterMs });
    const pruned = await pruneExpired();
    return await db.sweepRun.update({ where: { id: run.id }, data: { finishedAt: new Date(), reaped, reconciled, pruned } });
  } catch (error) {
    await db.sweepRun.update({ where: { id: run.id }, data: { finishedAt: new Date(), error: String(error) } }).catch(() => {});
    throw error;
  }
}
