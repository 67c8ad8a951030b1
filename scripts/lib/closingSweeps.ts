/**
 * The end of a test or fault run: sweeps (finishing whatever is unfinished, however young) until nothing is left
 * in progress, for as long as a last attempt can still land at the gateway (its lease, and the gateway's
 * late-landing time: operations/finality.ts), and a little more. What is still in progress then is the run's
 * finding. Imports server code late: the caller points the environment at its run first.
 */
export async function sweepUntilNothingInProgress(): Promise<void> {
  const { env } = await import("~/env");
  const { gateway } = await import("~/server/gateway");
  const { runSweep } = await import("~/server/sweep/runSweep");
  const { recordsInProgress } = await import("~/server/idempotency/reading");
  const deadline = Date.now() + env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS + gateway.lateLandingMs + 10_000;
  for (;;) {
    await runSweep({ reapAfterMs: 0, reconcile: false });
    if ((await recordsInProgress()).length === 0 || Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}
