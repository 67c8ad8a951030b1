/**
 * Shared set-up for the benchmarks: a stack of its own, all on loopback, moved
 * by TEST_SLOT like the tests' (slot 0: database charges_bench, gateway on
 * :4125, the production build of the app on :3115; see slotPort).
 */
import { randomBytes } from "node:crypto";
import autocannon from "autocannon";
import type { GatewayKind } from "~/gateway-sim/inspect";
import { gatewayEnv, slotDatabase, slotPort } from "../scripts/lib/config";
import { createDatabase } from "../scripts/lib/mariadbServer";
import { prepareDatabase } from "../scripts/lib/prepareDatabase";
import { run, startApp, startGateway, type Service } from "../scripts/lib/processes";

const DEFAULT_URL = "mysql://root@127.0.0.1:3306/charges";

/** Where the benchmark stack listens (this TEST_SLOT's band); `floor` is bench/replay.ts's reference server. */
export const BENCH_PORTS = {
  app: slotPort.app(15),
  floor: slotPort.app(16),
  baseline: slotPort.app(17),
  gateway: slotPort.gateway(15),
};

/**
 * The benchmark's stack. `baseline` also starts a second instance of the same
 * build on its own port with BENCHMARK_SKIP_IDEMPOTENCY=1 (bench/overhead.ts).
 */
export async function startBenchStack(extraEnv: Record<string, string> = {}, { baseline = false } = {}) {
  const base = new URL(process.env.DATABASE_URL ?? DEFAULT_URL);
  base.pathname = `/${slotDatabase("charges_bench")}`;
  const databaseUrl = base.toString();
  base.pathname = `/${slotDatabase("charges_bench")}_gateway`;
  const gatewayDatabaseUrl = base.toString();
  // GATEWAY=stripe benchmarks the Stripe adapter against the simulator's Stripe mode.
  const gateway = gatewayEnv(`http://127.0.0.1:${BENCH_PORTS.gateway}`, { realStripeAllowed: false });
  const env = {
    DATABASE_URL: databaseUrl,
    ...gateway,
    SESSION_SECRET: randomBytes(32).toString("hex"),
    DATABASE_POOL_SIZE: process.env.BENCH_POOL_SIZE ?? "10",
    ...extraEnv,
  };
  Object.assign(process.env, env);
  await prepareDatabase(databaseUrl, { fresh: true });
  await createDatabase(gatewayDatabaseUrl, { dropFirst: true });
  if (!process.argv.includes("--no-build")) await run("next", ["build"], { ...env, NODE_ENV: "production" });
  const services: Service[] = [];
  services.push(await startGateway({ port: BENCH_PORTS.gateway, databaseUrl: gatewayDatabaseUrl, quiet: true }));
  const app = await startApp({ port: BENCH_PORTS.app, env, quiet: true });
  services.push(app);
  const withoutIdempotency = baseline
    ? await startApp({ port: BENCH_PORTS.baseline, env: { ...env, BENCHMARK_SKIP_IDEMPOTENCY: "1" }, quiet: true })
    : undefined;
  if (withoutIdempotency) services.push(withoutIdempotency);
  const { createApiClient } = await import("~/server/auth/apiClients");
  const { apiKey } = await createApiClient("bench");
  return {
    url: app.url,
    baselineUrl: withoutIdempotency?.url,
    apiKey,
    databaseUrl,
    gatewayDatabaseUrl,
    gateway: gateway.GATEWAY as GatewayKind,
    stop: async () => {
      for (const s of services.reverse()) await s.stop();
      const { disconnectDatabase } = await import("~/server/db");
      await disconnectDatabase();
    },
  };
}

export type Load = { rps: number; p50: number; p99: number; errors: number; non2xx: number; total: number };

/**
 * A bounded autocannon run against loopback: `duration` seconds (default 8),
 * or until `until` settles (at most 10 minutes).
 */
export async function load({ until, ...opts }: autocannon.Options & { url: string; until?: Promise<unknown> }): Promise<Load> {
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ connections: 20, duration: until ? 600 : 8, ...opts }, (error, res) => (error ? reject(error) : resolve(res)));
    void until?.finally(() => instance.stop());
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}

export function chargeRequest(apiKey: string, opts: { key?: () => string; body?: object } = {}) {
  const body = JSON.stringify(opts.body ?? { amount_cents: 1000, currency: "usd", card_token: "tok_visa" });
  return {
    method: "POST" as const,
    path: "/api/charges",
    headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    body,
    setupRequest: (req: autocannon.Request) => (opts.key ? { ...req, headers: { ...req.headers, "Idempotency-Key": opts.key() } } : req),
  };
}

export function table(title: string, rows: Record<string, string | number>[]) {
  console.log(`\n${title}`);
  console.table(rows);
}

export const fmt = (n: number, digits = 1) => Number(n.toFixed(digits));
