/**
 * The randomized fault run: `npm run test:faults -- [--duration 900] [--seed N] [--rate 8] [--no-build]`.
 *
 * A seeded plan (fast-check) of client operations (fresh keys, retries,
 * another body or another client under a used key, keyless requests; SDK
 * clients with short timeouts; refunds of the run's charges: full, partial,
 * over the charge, racing with different keys, retried, keyless, and racing a
 * retry of their charge's operation) and gateway behaviours (fast, slower than
 * the client, slower than the gateway timeout, errors, charged-then-error,
 * declines; refunds slow, failing, refunded-then-failing), run over the real stack (two app instances, the sweeper, the
 * simulated gateway, a private MariaDB) while faults strike: app instances
 * SIGKILLed and restarted, MariaDB killed and restarted, deadlocks forced on
 * completions, keys expiring mid-flight, extra sweeps and prunes at once,
 * some of the gateway's money inserts stalled past the sweeper's write-off;
 * and webhooks: three endpoints of the two clients post to receivers that
 * answer 500, drop connections, answer slowly (some past the dispatcher's
 * timeout) and go away for a while, while the dispatchers are SIGKILLed and
 * restarted (sometimes two at once).
 * Then a final sweep, the ledger reconciliation (which heals late charges)
 * and the invariants (and the refunds' own: scripts/lib/faults/verifyRefunds.ts);
 * every answer a client saw must agree with the ledger, and every stored
 * "no money moved" with the gateway (noMoneyAnswers.ts). Then the receivers
 * heal, the deliveries drain, and every event must have reached every
 * subscribed endpoint, processed once, signed rightly (verifyWebhooks.ts).
 * Prints the seed; exits 1 on any violation. `npm test` runs a short one.
 */
import { randomBytes, randomInt, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { bundleForRun } from "./lib/bundles";
import { loadDotEnv } from "./lib/config";
import { makePlan } from "./lib/faults/plan";
import { startWebhookReceivers, type WebhookReceivers } from "./lib/faults/receivers";
import { executePlan } from "./lib/faults/run";
import { sweepUntilNothingInProgress } from "./lib/closingSweeps";
import { startFaultStack } from "./lib/faults/stack";
import { run } from "./lib/processes";

loadDotEnv();
const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "90" },
    seed: { type: "string" },
    rate: { type: "string", default: "6" },
    "no-build": { type: "boolean", default: false },
  },
});
const durationMs = Number(values.duration) * 1000;
const rate = Number(values.rate);
const seed = values.seed === undefined ? randomInt(2 ** 31) : Number(values.seed);
if (!Number.isFinite(durationMs) || durationMs <= 0 || !Number.isFinite(rate) || rate <= 0 || !Number.isInteger(seed)) {
  console.error(
    "usage: npm run test:faults -- [--duration <seconds>] [--rate <ops/s>] [--seed <integer>] [--no-build]",
  );
  process.exit(2);
}

// A request carried out late is only refused by a gateway that honours Charge-Not-After (the simulator's own).
const plan = makePlan(seed, durationMs, rate, { lateRequests: (process.env.GATEWAY ?? "sim") === "sim" });
console.log(
  `fault run: seed ${seed} (replay with --seed ${seed}), ` +
    `${plan.operations.length} operations over ${durationMs / 1000} s, ${plan.faults.length} faults`,
);

if (!values["no-build"]) {
  // The build reads the environment (a throwaway session secret is enough: the run's apps get their own).
  await run("next", ["build"], { NODE_ENV: "production", SESSION_SECRET: randomBytes(32).toString("hex") });
}
// Workers and the gateway from bundles: a fault run kills and restarts them by the dozen (lib/bundles.ts).
await bundleForRun();
const stack = await startFaultStack();
let exitCode = 1;
let receivers: WebhookReceivers | undefined;
try {
  // This process reads the run's database and gateway (final sweep, reconciliation, checks).
  Object.assign(process.env, stack.env);
  const since = new Date(Date.now() - 1_000);
  const runId = `f${seed}-${randomUUID().slice(0, 6)}`;
  receivers = await startWebhookReceivers(plan, stack, runId);
  const result = await executePlan(plan, stack, runId, receivers);

  // The end of the run: no more faults. Finish everything left, as soon as nothing can still land.
  await stack.stopSweeper();
  const { db, disconnectDatabase } = await import("~/server/db");
  await sweepUntilNothingInProgress();
  const { verifyRun } = await import("./lib/faults/verify");
  const { describeCounts } = await import("~/server/ledger/reconcile");
  const verdict = await verifyRun(result.observations, since, result.requiredWindows, result.outages);

  // The reconciliation above may have written events too. Heal: receivers listening and answering, a dispatcher
  // running; then every delivery must end delivered (a drain on a loaded machine can take a while: polled).
  await receivers.heal();
  if (stack.dispatcherCount() === 0) await stack.crashDispatchers(0, 1);
  const { waitForDeliveries, verifyWebhooks } = await import("./lib/faults/verifyWebhooks");
  const pending = await waitForDeliveries(180_000);
  await receivers.close();
  const hooks = await verifyWebhooks(receivers.endpoints);
  verdict.violations.push(...hooks.violations);

  const byStatus: Record<string, number> = {};
  const byKind: Record<string, number> = {};
  for (const o of result.observations) {
    const label =
      (o.route === "refunds" ? "refund " : "") +
      (o.status
        ? `${o.status}${o.code ? ` ${o.code}` : ""}${o.replayed ? " (replay)" : ""}`
        : (o.problem ?? "no answer"));
    byStatus[label] = (byStatus[label] ?? 0) + 1;
    byKind[o.kind] = (byKind[o.kind] ?? 0) + 1;
  }
  console.log(`\nfault run finished in ${Math.round(result.durationMs / 1000)} s (seed ${seed})`);
  console.log(`operations ${result.observations.length}: ${JSON.stringify(byKind)}`);
  console.log(`answers: ${JSON.stringify(byStatus)}`);
  console.log(
    `final answers: ${verdict.finished} operations, the slowest ${verdict.slowestFinalMs} ms after its first ` +
      `attempt (the bound: ${verdict.finalBoundMs} ms and the database's outages in its way, or longer where the ` +
      `sweeper's sweeps came slower); the longest stretch without a sweep ${verdict.longestSweepGapMs} ms`,
  );
  console.log(`faults: ${JSON.stringify(result.faultsDone)}, deadlocks forced ${result.deadlocksForced}`);
  const { stalls } = result;
  console.log(
    `storage stalls: ${stalls.gaps} gaps locked, ${stalls.held} gateway inserts held (at most ${stalls.mostAtOnce} ` +
      "at once)",
  );
  console.log(
    `keyless requests sent and answered while the header was required of their client: ${verdict.insideWindows}`,
  );
  console.log(
    `ledger: ${describeCounts(verdict.report)}, repaired by the closing reconciliation ${verdict.report.repaired}`,
  );
  const { charges, refunds } = verdict.noMoneyAnswers;
  const healed = await db.ledgerMismatch.count({ where: { healedRefundId: { not: null } } });
  console.log(
    `stored "no money moved" answers checked against the gateway: ${charges} charges, ${refunds} refunds ` +
      `(late charges healed by the ledger: ${healed})`,
  );
  console.log(
    `webhooks: ${hooks.events} events ${JSON.stringify(hooks.byType)}; ${hooks.expected} (event, subscribed ` +
      `endpoint) pairs over ${receivers.endpoints.length} endpoints, processed exactly once: ${hooks.processedOnce}; ` +
      `deliveries ${JSON.stringify(hooks.deliveryStates)} (pending after the drain: ${pending}), attempts ` +
      `${hooks.attempts}`,
  );
  console.log(
    `receivers: ${hooks.received} requests (${JSON.stringify(receivers.dealt)} while faulty), duplicates ` +
      `deduplicated ${hooks.duplicates}, bad signatures ${hooks.badSignatures}; events found for ${hooks.charges} ` +
      `charges, ${hooks.refunds} refunds, ${hooks.finishedOperations} finished operations`,
  );
  console.log(`violations: ${verdict.violations.length}`);
  for (const v of verdict.violations.slice(0, 50)) console.log(`  ${v}`);
  if (verdict.violations.length > 0) console.log(`logs of the run's services: ${stack.logs}`);
  exitCode = verdict.violations.length === 0 ? 0 : 1;
  await disconnectDatabase();
} finally {
  await receivers?.close();
  await receivers?.closeDatabase();
  await stack.stop();
}
process.exit(exitCode);
