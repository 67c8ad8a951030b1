import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { db, poolUsage } from "~/server/db";

/**
 * The app's Prometheus metrics (GET /api/metrics). What happens in this
 * process is counted as it happens (answers, claim and gateway latency, the
 * pool); what other processes do (the sweeper, the reconciliation) and the
 * rollout counts are read from the database at scrape time, so every
 * instance reports the same figures for them.
 */
function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "charges_" });
  const registers = [registry];
  const HOUR = 3_600_000;

  const answers = new Counter({
    name: "charges_answers_total",
    help: "Answers of the money routes by route, outcome (fresh, replay, in_progress, or the error's code), status",
    labelNames: ["route", "outcome", "status"] as const,
    registers,
  });
  const claimSeconds = new Histogram({
    name: "charges_idempotency_claim_seconds",
    help: "Time to claim a key or answer from its record (read, INSERT, take-over), by result",
    labelNames: ["result"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers,
  });
  const claimConflicts = new Counter({
    name: "charges_idempotency_claim_conflicts_total",
    help:
      "Claim INSERTs that lost a lock conflict (an InnoDB deadlock or a Galera certification failure, 1213; " +
      "a lock wait timeout, 1205) and went round again",
    registers,
  });
  const gatewaySeconds = new Histogram({
    name: "charges_gateway_call_seconds",
    help: "Time of one gateway charge call, by result (charged, declined, unknown)",
    labelNames: ["result"] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers,
  });

  new Gauge({
    name: "charges_db_pool_connections_in_use",
    help: "Database connections of this process in use now",
    registers,
    collect() {
      this.set(poolUsage.active);
    },
  });
  new Gauge({
    name: "charges_db_pool_limit",
    help: "Size of this process's database pool",
    registers,
    collect() {
      this.set(poolUsage.limit);
    },
  });
  new Counter({
    name: "charges_db_pool_waits_total",
    help: "Requests that waited for a free connection",
    registers,
    collect() {
      this.reset();
      this.inc(poolUsage.waited);
    },
  });

  new Gauge({
    name: "charges_sweeper_records_last_hour",
    help: "Records the sweepers finished in the last hour: reaped (abandoned), reconciled (charged), pruned",
    labelNames: ["result"] as const,
    registers,
    async collect() {
      const { _sum } = await db.sweepRun.aggregate({
        where: { startedAt: { gte: new Date(Date.now() - HOUR) } },
        _sum: { reaped: true, reconciled: true, pruned: true },
      });
      this.set({ result: "reaped" }, _sum.reaped ?? 0);
      this.set({ result: "reconciled" }, _sum.reconciled ?? 0);
      this.set({ result: "pruned" }, _sum.pruned ?? 0);
    },
  });
  new Gauge({
    name: "charges_sweeper_last_run_timestamp_seconds",
    help: "When the last sweep finished (0: never); a sweep that failed counts in charges_sweeper_failures_last_hour",
    registers,
    async collect() {
      const last = await db.sweepRun.findFirst({ where: { finishedAt: { not: null } }, orderBy: { id: "desc" } });
      this.set(last?.finishedAt ? last.finishedAt.getTime() / 1000 : 0);
    },
  });
  new Gauge({
    name: "charges_sweeper_failures_last_hour",
    help: "Sweeps that ended in an error in the last hour",
    registers,
    async collect() {
      const lastHour = { gte: new Date(Date.now() - HOUR) };
      this.set(await db.sweepRun.count({ where: { startedAt: lastHour, error: { not: null } } }));
    },
  });
  new Gauge({
    name: "charges_ledger_open_mismatches",
    help: "Ledger mismatches the reconciliation found and nobody resolved yet (0 is the only good value)",
    registers,
    async collect() {
      this.set(await db.ledgerMismatch.count({ where: { resolvedAt: null } }));
    },
  });
  new Gauge({
    name: "charges_ledger_last_reconciliation_timestamp_seconds",
    help: "When the last reconciliation finished (0: never)",
    registers,
    async collect() {
      const finished = { finishedAt: { not: null } };
      const last = await db.reconciliationRun.findFirst({ where: finished, orderBy: { id: "desc" } });
      this.set(last?.finishedAt ? last.finishedAt.getTime() / 1000 : 0);
    },
  });
  return { registry, answers, claimSeconds, claimConflicts, gatewaySeconds };
}

const globalForMetrics = globalThis as unknown as { chargesMetrics?: ReturnType<typeof createMetrics> };
/** One set per process, whichever bundle imports it first. */
globalForMetrics.chargesMetrics ??= createMetrics();
export const metrics = globalForMetrics.chargesMetrics;

/** Seconds since `startedAt` (a performance.now() value), for the histograms. */
export const secondsSince = (startedAt: number) => (performance.now() - startedAt) / 1000;
