/**
 * After a fault run: every operation ended with its final answer in bounded time, whatever its client did. The
 * bound of an operation whose gateway never carries it out is REAP_AFTER_MS + the gateway timeout + the
 * gateway's late-landing time (Stripe's window; 0 for the simulator) + 10 s from its first attempt
 * (operations/finality.ts); the run's database outages, during which nothing can be stored, are added to it.
 * Pure: it judges what was read of the records and what the run did.
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

/** The longest time without a sweep starting in [from, to]: what a late answer waited on, if not the gateway. */
function longestSweepGap(sweepStarts: number[], from: number, to: number): number {
  const inside = [from, ...sweepStarts.filter((t) => t > from && t < to), to];
  return Math.max(...inside.slice(1).map((t, i) => t - inside[i]!));
}

/** The bound of the header comment, before the outages. */
export const boundMs = (bound: Bound) => bound.reapAfterMs + bound.gatewayTimeoutMs + bound.lateLandingMs + SLACK_MS;

/**
 * One line per operation answered later than its bound (plus the outages in its way), with what it waited on: its
 * last attempt, who finished it, and the longest stretch in its life when no sweep started (`sweepStarts`, ms).
 */
export function answeredLate(
  records: Finished[],
  bound: Bound,
  outages: Outage[],
  sweepStarts: number[] = [],
): string[] {
  const limit = boundMs(bound);
  const late: string[] = [];
  for (const r of records) {
    const [from, to] = [r.createdAt.getTime(), r.completedAt.getTime()];
    const allowed = limit + outages.reduce((sum, o) => sum + overlapMs(o, from, to), 0);
    if (to - from > allowed)
      late.push(
        `${r.route} record ${r.id}: final ${to - from} ms after its first attempt; the bound was ${allowed} ms ` +
          `(last attempt at +${r.lastAttemptAt.getTime() - from} ms, finished by ${r.finishedBy}, ` +
          `no sweep started for ${longestSweepGap(sweepStarts, from, to)} ms)`,
      );
  }
  return late;
}
