/**
 * The background sweeper: `tsx src/worker/sweeper.ts` runs a sweep every
 * SWEEP_INTERVAL_MS; with `--once` it runs one and exits. Any number of these may
 * run beside any number of app instances.
 */
import { env } from "~/env";
import { disconnectDatabase } from "~/server/db";
import { runSweep } from "~/server/sweep/runSweep";

async function sweepOnce() {
  const run = await runSweep();
  console.log(`sweep: reaped ${run.reaped}, reconciled ${run.reconciled}, pruned ${run.pruned}`);
}

if (process.argv.includes("--once")) {
  await sweepOnce();
  await disconnectDatabase();
} else {
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => (stopping = true));
  console.log(`sweeper: every ${env.SWEEP_INTERVAL_MS} ms, reaping in_progress records older than ${env.REAP_AFTER_MS} ms`);
  while (!stopping) {
    await sweepOnce().catch((error) => console.error("sweep failed:", (error as Error).message));
    for (let waited = 0; waited < env.SWEEP_INTERVAL_MS && !stopping; waited += 250) await new Promise((r) => setTimeout(r, 250));
  }
  await disconnectDatabase();
}
