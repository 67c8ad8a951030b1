/**
 * The background sweeper: `tsx src/worker/sweeper.ts` runs a sweep every
 * SWEEP_INTERVAL_MS; with `--once` it runs one and exits. Any number of these may
 * run beside any number of app instances.
 */
import { env } from "~/env";
import { disconnectDatabase } from "~/server/db";
import { log } from "~/server/observability/log";
import { runSweep } from "~/server/sweep/runSweep";

async function sweepOnce() {
  const run = await runSweep();
  log.info({ reaped: run.reaped, reconciled: run.reconciled, pruned: run.pruned }, "sweep finished");
}

if (process.argv.includes("--once")) {
  await sweepOnce();
  await disconnectDatabase();
} else {
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => (stopping = true));
  log.info({ intervalMs: env.SWEEP_INTERVAL_MS, reapAfterMs: env.REAP_AFTER_MS }, "sweeper started");
  while (!stopping) {
    await sweepOnce().catch((error: unknown) => log.error({ err: error }, "sweep failed"));
    for (let waited = 0; waited < env.SWEEP_INTERVAL_MS && !stopping; waited += 250)
      await new Promise((r) => setTimeout(r, 250));
  }
  await disconnectDatabase();
}
