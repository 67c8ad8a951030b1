/**
 * After a fault run: every operation ended with its final answer in bounded time, whatever its client did. The
 * bound of an operation whose gateway never carries it out is REAP_AFTER_MS + the gateway timeout + the
 * gateway's late-landing time (Stripe's window; 0 for the simulator) from its first attempt (operations/finality.ts),
 * then 10 s and the run's database outages in its way (nothing can be stored then), or the end of the background
 * sweeper's second finished sweep begun after that, whichever is later: the sweeper finishes what is due at its next
 * sweep, and on a loaded machine its sweeps come further apart than SWEEP_INTERVAL_MS (the run prints the longest
 * stretch without one; it is not judged). A dead sweeper leaves the bound in time alone. Pure: it judges what was
 * read of the records and what the run did.
 */

/** A stretch of the run when the app's database was down (killed, then started again). */
export type Outage = { from: number; to: number };

/**
 * A complete record: when its first and last attempts were made, when its answer was stored (the database's clock)
 * and by whom.
 */
export type Finished = {
  id: bigint;
  route: string;
  createdAt: Date;
  lastAttemptAt: Date;
  completedAt: Date;
  finishedBy: string | null;
};

export type Bound = { reapAfterMs: number; gatewayTimeoutMs: number; lateLandingMs: number };

export const SLACK_MS = 10_000;

const overlapMs = (o: Outage, from: number, to: number) => Math.max(0, Math.min(o.to, to) - Math.max(o.from, from));

/** A sweep of the background sweeper (sweep_runs), in ms; `finishedAt` null if it never finished. */
export type Sweep = { startedAt: number; finishedAt: number | null };

/** The longest time without a sweep starting in [from, to]. */
export function longestSweepGap(sweeps: Sweep[], from: number, to: number): number {
  const inside = [from, ...sweeps.map((s) => s.startedAt).filter((t) => t > from && t < to), to];
  return Math.max(...inside.slice(1).map((t, i) => t - inside[i]!));
}

/** When the second finished sweep begun at or after `due` finished (`sweeps` in order of start); 0 if none did. */
function secondSweepEnd(sweeps: Sweep[], due: number): number {
  return sweeps.filter((s) => s.startedAt >= due && s.finishedAt !== null)[1]?.finishedAt ?? 0;
}

/** The bound of the header comment in time, before the outages. */
export const boundMs = (bound: Bound) => bound.reapAfterMs + bound.gatewayTimeoutMs + bound.lateLandingMs + SLACK_MS;

/**
 * One line per operation answered later than its bound, with what it waited on: its last attempt, who finished it,
 * and the longest stretch in its life when no sweep started.
 */
export function answeredLate(records: Finished[], bound: Bound, outages: Outage[], sweeps: Sweep[] = []): string[] {
  const limit = boundMs(bound);
  const late: string[] = [];
  for (const r of records) {
    const [from, to] = [r.createdAt.getTime(), r.completedAt.getTime()];
    const inTime = limit + outages.reduce((sum, o) => sum + overlapMs(o, from, to), 0);
    // The sweeps after an outage already came after it: not added again.
    const allowed = Math.max(inTime, secondSweepEnd(sweeps, from + limit - SLACK_MS) - from);
    if (to - from > allowed)
      late.push(
        `${r.route} record ${r.id}: final ${to - from} ms after its first attempt; the bound was ${allowed} ms ` +
          `(last attempt at +${r.lastAttemptAt.getTime() - from} ms, finished by ${r.finishedBy}, ` +
          `no sweep started for ${longestSweepGap(sweeps, from, to)} ms)`,
      );
  }
  return late;
}
