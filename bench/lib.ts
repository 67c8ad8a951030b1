/**
 * Shared set-up for the benchmarks: a stack of its own (database charges_bench,
 * gateway on :4210, the production build of the app on :3200), all on loopback.
 * With TEST_SLOT=N (as for `npm test`) the ports move by 20*N and the databases
 * are charges_bench<N>, so benchmarks of several engineers can share a machine.
 */
import { randomBytes } from "node:crypto";
import autocannon from "autocannon";
import type { GatewayKind } from "~/gateway-sim/inspect";
import { gatewayEnv } from "../scripts/lib/config";
import { createDatabase } from "../scripts/lib/mariadbServer";
import { prepareDatabase } from "../scripts/lib/prepareDatabase";
import { run, startApp, startGateway, type Service } from "../scripts/lib/processes";

const DEFAULT_URL = "mysql://root@127.0.0.1:3306/charges";

const slot = Number(process.env.TEST_SLOT ?? 0);
const BENCH_DB = slot === 0 ? "charges_bench" : `charges_bench${slot}`;
export const BENCH_PORTS = { app: 3200 + 20 * slot, gateway: 4210 + 20 * slot };

/** `fresh: false` keeps the database of the last run (bench:dashboard --reuse: its seeding takes a quarter of an hour). */
export async function startBenchStack(extraEnv: Record<string, string> = {}, { fresh = true } = {}) {
  const base = new URL(process.env.DATABASE_URL ?? DEFAULT_URL);
  base.pathname = `/${BENCH_DB}`;
  const databaseUrl = base.toString();
  base.pathname = `/${BENCH_DB}_gateway`;
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
  await prepareDatabase(databaseUrl, { fresh });
  await createDatabase(gatewayDatabaseUrl, { dropFirst: true });
  if (!process.argv.includes("--no-build")) await run("next", ["build"], { ...env, NODE_ENV: "production" });
  const services: Service[] = [];
  services.push(await startGateway({ port: BENCH_PORTS.gateway, databaseUrl: gatewayDatabaseUrl, quiet: true }));
  const app = await startApp({ port: BENCH_PORTS.app, env, quiet: true });
  services.push(app);
  const { createApiClient } = await import("~/server/auth/apiClients");
  const { apiKey } = await createApiClient("bench");
  return {
    url: app.url,
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

/** A progress line for long seeding, rewritten in place: "records 1 250 000 / 5 000 000 (25 %), 38 s". */
export function progress(what: string, total: number) {
  const started = performance.now();
  let last = 0;
  return (done: number) => {
    const now = performance.now();
    if (done < total && now - last < 1_000) return;
    last = now;
    const line = `${what} ${done.toLocaleString("en")} / ${total.toLocaleString("en")} (${Math.floor((done / total) * 100)} %), ${fmt((now - started) / 1000)} s`;
    process.stdout.write(process.stdout.isTTY ? `\r${line}${done >= total ? "\n" : ""}` : `${line}\n`);
  };
}
