import { env } from "~/env";
import { db } from "~/server/db";
import { reconcileLedger, type ReconciliationResult } from "./reconcile";

/** Each window starts this long before the last one ended: a charge that straddled it is seen whole. */
const OVERLAP_MS = 10 * 60_000;
/** The first run of a new installation looks back this far. */
const FIRST_WINDOW_MS = 3_600_000;

/**
 * The reconciliation a sweeper runs every RECONCILE_INTERVAL_MS: from where
 * the last finished run's window ended (less an overlap) up to now. Several
 * sweepers may run it at once: findings are stored once per fingerprint and a
 * repair takes its record over under a fencing token, so a second run finds
 * the work done.
 */
export async function reconcileIfDue(now = new Date()): Promise<ReconciliationResult | null> {
  if (env.RECONCILE_INTERVAL_MS === 0) return null;
  const last = await db.reconciliationRun.findFirst({ orderBy: { id: "desc" } });
  if (last && now.getTime() - last.startedAt.getTime() < env.RECONCILE_INTERVAL_MS) return null;
  const lastFinished = await db.reconciliationRun.findFirst({
    where: { error: null, finishedAt: { not: null } },
    orderBy: { id: "desc" },
  });
  const since = lastFinished
    ? new Date(Math.max(lastFinished.windowEnd.getTime() - OVERLAP_MS, now.getTime() - 24 * 3_600_000))
    : new Date(now.getTime() - FIRST_WINDOW_MS);
  return reconcileLedger({ since, until: now });
}
