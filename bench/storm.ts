/**
 * Slow gateway storm: 200 operations in flight on a gateway slower than the
 * client's timeout, retried by the SDK. Reports duplicates (must be 0), the
 * latency of the 409 answers while the gateway calls are pending, and the DB
 * pool's use while they are pending (must stay below its limit, or the script
 * fails) and once they answer. A control round sends the same 200 operations
 * to a fast gateway, to tell what the slow gateway costs the pool from what
 * 200 simultaneous charges cost it anyway.
 */
import { randomUUID } from "node:crypto";
import * as mariadb from "mariadb";
import { ChargesClient } from "~/client";
import type { PoolSlot } from "~/server/poolUsage";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { fmt, startBenchStack, table } from "./lib";

const OPERATIONS = 200;
const GATEWAY_DELAY_MS = 3_000;
const CLIENT_TIMEOUT_MS = 1_000;
const WATCHDOG_MS = 120_000;

type PoolUsage = { limit: number; recent: PoolSlot[] };

const stack = await startBenchStack({ GATEWAY_TIMEOUT_MS: "10000" });
// Bounded in time: a run that hangs fails loudly instead of waiting forever.
let unresolved = 0;
setTimeout(() => {
  console.error(`storm: ${unresolved} operations unresolved after ${WATCHDOG_MS} ms`);
  void stack.stop().finally(() => process.exit(2));
}, WATCHDOG_MS).unref();

/** 200 operations at once through the SDK; what the client saw, and when. */
async function storm(cardToken: string) {
  const conflictLatencies: number[] = [];
  let serviceUnavailable = 0;
  let timedOut = 0;
  const timedFetch: typeof fetch = async (input, init) => {
    const started = performance.now();
    const res = await fetch(input, init).catch((error: Error) => {
      if (error.name === "TimeoutError") timedOut += 1;
      throw error;
    });
    if (res.status === 409) conflictLatencies.push(performance.now() - started);
    if (res.status === 503) serviceUnavailable += 1;
    return res;
  };
  const sdk = new ChargesClient({ baseUrl: stack.url, apiKey: stack.apiKey, attemptTimeoutMs: CLIENT_TIMEOUT_MS, deadlineMs: 60_000, baseDelayMs: 200, fetch: timedFetch });
  const tag = `cus_storm_${randomUUID().slice(0, 6)}`;
  unresolved = OPERATIONS;
  const start = Date.now();
  const results = await Promise.all(
    Array.from({ length: OPERATIONS }, (_, i) =>
      sdk.createCharge({ amount_cents: 500, currency: "usd", card_token: cardToken, customer_id: `${tag}_${i}` }).finally(() => unresolved--),
    ),
  );
  return { tag, start, end: Date.now(), results, conflictLatencies: conflictLatencies.sort((a, b) => a - b), serviceUnavailable, timedOut };
}

/** Charges the gateway made more than once for a customer. */
async function duplicateCharges(tag: string) {
  const gw = await mariadb.createConnection(connectionOptions(stack.gatewayDatabaseUrl, true));
  const perCustomer: { n: bigint }[] = await gw.query("SELECT COUNT(*) AS n FROM sim_charges WHERE customer_id LIKE ? GROUP BY customer_id", [`${tag}_%`]);
  await gw.end();
  return perCustomer.reduce((sum, r) => sum + Number(r.n) - 1, 0);
}

/** The app's own record of its pool, per 100 ms: exact, where a sampled gauge would miss bursts. */
async function poolUse(from: number, to: number) {
  const { pool } = (await (await fetch(`${stack.url}/api/health`)).json()) as { pool: PoolUsage };
  const slots = pool.recent.filter((s) => s.at >= Math.floor(from / 100) * 100 && s.at < to);
  const acquired = slots.reduce((n, s) => n + s.acquired, 0);
  return {
    limit: pool.limit,
    maxActive: Math.max(0, ...slots.map((s) => s.maxActive)),
    acquired,
    meanHeldMs: acquired ? slots.reduce((n, s) => n + s.heldMs, 0) / acquired : 0,
    waited: slots.reduce((n, s) => n + s.waited, 0),
  };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

try {
  const slow = await storm(`tok_slow_${GATEWAY_DELAY_MS}`);
  // Every gateway call was made after `start` and answers GATEWAY_DELAY_MS
  // later, so until then every call is pending.
  const pending = await poolUse(slow.start, slow.start + GATEWAY_DELAY_MS);
  const answering = await poolUse(slow.start + GATEWAY_DELAY_MS, slow.end + 100);
  await new Promise((r) => setTimeout(r, 1_000)); // a quiet second between rounds
  const fast = await storm("tok_visa");
  const control = await poolUse(fast.start, fast.end + 100);
  const duplicates = (await duplicateCharges(slow.tag)) + (await duplicateCharges(fast.tag));

  const conflicts = slow.conflictLatencies;
  table(`Slow gateway storm: ${OPERATIONS} operations, gateway ${GATEWAY_DELAY_MS} ms, client timeout ${CLIENT_TIMEOUT_MS} ms`, [
    { metric: "operations answered 201 (slow / fast gateway)", value: `${slow.results.filter((r) => r.ok).length} / ${fast.results.filter((r) => r.ok).length}` },
    { metric: "duplicate charges at the gateway (must be 0)", value: duplicates },
    { metric: "attempts the client timed out (retried with the same key)", value: slow.timedOut },
    { metric: "409 answers while gateway calls pending", value: conflicts.length },
    { metric: "409 latency p50 ms", value: conflicts.length ? fmt(quantile(conflicts, 0.5)) : "n/a" },
    { metric: "409 latency p99 ms", value: conflicts.length ? fmt(quantile(conflicts, 0.99)) : "n/a" },
    { metric: "409 p99 / gateway delay", value: conflicts.length ? fmt(quantile(conflicts, 0.99) / GATEWAY_DELAY_MS, 3) : "n/a" },
    { metric: "answers 503 (database or pool unavailable)", value: slow.serviceUnavailable + fast.serviceUnavailable },
    { metric: "wall time s (slow / fast gateway)", value: `${fmt((slow.end - slow.start) / 1000)} / ${fmt((fast.end - fast.start) / 1000)}` },
  ]);
  table(`DB pool (limit ${pending.limit}), from the app's per-100 ms record`, [
    { phase: "slow gateway: calls pending (first 3 s)", ...poolRow(pending) },
    { phase: "slow gateway: calls answered, charges recorded", ...poolRow(answering) },
    { phase: "control: fast gateway, same 200 operations", ...poolRow(control) },
  ]);
  const failed = duplicates > 0 || slow.serviceUnavailable + fast.serviceUnavailable > 0 || pending.maxActive >= pending.limit || pending.waited > 0;
  if (failed) process.exitCode = 1;
} finally {
  await stack.stop();
}
process.exit(process.exitCode ?? 0);

function poolRow(use: Awaited<ReturnType<typeof poolUse>>) {
  return {
    "max in use": use.maxActive,
    "max / limit": fmt(use.maxActive / use.limit, 2),
    "connections handed out": use.acquired,
    "mean held ms": fmt(use.meanHeldMs, 1),
    "requests that waited": use.waited,
  };
}
