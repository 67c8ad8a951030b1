/**
 * Slow gateway storm: 200 operations in flight on a gateway slower than the
 * client's timeout, retried by the SDK. Reports duplicates (must be 0), the
 * latency of the 409 answers while the gateway calls are pending, and the DB
 * pool's high-water mark (must stay below its limit).
 */
import { randomUUID } from "node:crypto";
import * as mariadb from "mariadb";
import { ChargesClient } from "~/client";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { fmt, startBenchStack, table } from "./lib";

const OPERATIONS = 200;
const GATEWAY_DELAY_MS = 3_000;
const CLIENT_TIMEOUT_MS = 1_000;

const stack = await startBenchStack({ GATEWAY_TIMEOUT_MS: "10000" });
try {
  const conflictLatencies: number[] = [];
  let serviceUnavailable = 0;
  const timedFetch: typeof fetch = async (input, init) => {
    const started = performance.now();
    const res = await fetch(input, init);
    if (res.status === 409) conflictLatencies.push(performance.now() - started);
    if (res.status === 503) serviceUnavailable += 1;
    return res;
  };
  const sdk = new ChargesClient({ baseUrl: stack.url, apiKey: stack.apiKey, attemptTimeoutMs: CLIENT_TIMEOUT_MS, deadlineMs: 60_000, baseDelayMs: 200, fetch: timedFetch });
  const customers = Array.from({ length: OPERATIONS }, (_, i) => `cus_storm_${i}_${randomUUID().slice(0, 6)}`);
  // Pool use while the gateway calls are pending, sampled from the app itself
  // (each sample is one query of its own, counted in `active`).
  const samples: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const h = await (await fetch(`${stack.url}/api/health`)).json().catch(() => undefined);
      if (h) samples.push(h.pool.active);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const started = performance.now();
  const results = await Promise.all(
    customers.map((customer_id) => sdk.createCharge({ amount_cents: 500, currency: "usd", card_token: `tok_slow_${GATEWAY_DELAY_MS}`, customer_id })),
  );
  const elapsed = performance.now() - started;
  sampling = false;
  await sampler;
  await new Promise((r) => setTimeout(r, GATEWAY_DELAY_MS));

  const gw = await mariadb.createConnection(connectionOptions(stack.gatewayDatabaseUrl, true));
  const perCustomer: { customer_id: string; n: bigint }[] = await gw.query(
    "SELECT customer_id, COUNT(*) AS n FROM sim_charges WHERE customer_id LIKE 'cus_storm_%' GROUP BY customer_id",
  );
  await gw.end();
  const duplicates = perCustomer.reduce((sum, r) => sum + Number(r.n) - 1, 0);
  const health = await (await fetch(`${stack.url}/api/health`)).json();
  conflictLatencies.sort((a, b) => a - b);
  const p = (q: number) => conflictLatencies[Math.min(conflictLatencies.length - 1, Math.floor(q * conflictLatencies.length))] ?? 0;

  table(`Slow gateway storm: ${OPERATIONS} operations, gateway ${GATEWAY_DELAY_MS} ms, client timeout ${CLIENT_TIMEOUT_MS} ms`, [
    { metric: "operations answered 201", value: results.filter((r) => r.ok).length },
    { metric: "duplicate charges at the gateway (must be 0)", value: duplicates },
    { metric: "409 answers while gateway calls pending", value: conflictLatencies.length },
    { metric: "409 latency p50 ms", value: fmt(p(0.5)) },
    { metric: "409 latency p99 ms", value: fmt(p(0.99)) },
    { metric: "409 p99 / gateway delay", value: fmt(p(0.99) / GATEWAY_DELAY_MS, 3) },
    { metric: "DB connections in use, sampled p50 / max / limit", value: `${[...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)] ?? 0} / ${Math.max(0, ...samples)} / ${health.pool.limit}` },
    { metric: "DB pool high-water mark incl. request bursts / limit", value: `${health.pool.maxActive} / ${health.pool.limit}` },
    { metric: "answers 503 service_unavailable (pool or DB exhausted)", value: serviceUnavailable },
    { metric: "wall time s", value: fmt(elapsed / 1000) },
  ]);
  // The pool may be busy for an instant when 200 requests land at once; what must
  // not happen is requests failing for want of a connection.
  if (duplicates > 0 || serviceUnavailable > 0) process.exitCode = 1;
} finally {
  await stack.stop();
}
process.exit(process.exitCode ?? 0);
