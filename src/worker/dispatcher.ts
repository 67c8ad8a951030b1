/**
 * The webhook dispatcher: `tsx src/worker/dispatcher.ts` posts due deliveries until stopped (SIGINT, SIGTERM:
 * it finishes the posts in flight). Any number of these may run beside any number of app instances
 * (src/server/webhooks/dispatcher.ts). `--once`: one round, then exit.
 */
import { env } from "~/env";
import { disconnectDatabase } from "~/server/db";
import { log } from "~/server/observability/log";
import { dispatchOnce, runDispatcher } from "~/server/webhooks/dispatcher";

if (process.argv.includes("--once")) {
  await dispatchOnce();
} else {
  let stopping = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => (stopping = true));
  log.info(
    { pollMs: env.WEBHOOK_POLL_INTERVAL_MS, concurrency: env.WEBHOOK_CONCURRENCY },
    "webhook dispatcher started",
  );
  await runDispatcher(() => stopping);
}
await disconnectDatabase();
