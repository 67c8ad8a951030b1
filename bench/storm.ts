/**
 * Slow gateway storm: OPERATIONS (1000) operations in flight on a gateway
 * slower than the client's timeout, retried by the SDK. Reports duplicates
 * (must be 0), the latency of the 409 answers while the gateway calls are
 * pending, the DB pool's use, and attempts and 409s per operation.
 *
 * The main round starts the operations over 2 s, so all of them are in flight
 * together for the last second before the first gateway answer (3 s): this is
 * the round that must keep the pool below its limit from start to finish, or
 * the script fails. Two more rounds put the same load in one instant, on the
 * slow gateway and (control) on a fast one: they show what that many requests
 * in the same millisecond cost on 2 shared cores, whatever the gateway does.
 * The last two rounds measure `Prefer: wait` (which the SDK sends by default,
 * a second below its attempt timeout, so they use a 2.5 s timeout: wait=1):
 * the same ramped load without it and with it.
 *
 * `--profile` records a CPU profile of each app instance during the ramped
 * round (bench/profile.cjs) and prints whose code its samples were in.
 *
 * `--proxy` puts nginx in front of the app (bench/proxy.ts), as a deployment
 * would: the clients' reconnections then end at the proxy, not at the app's
 * accept queue (see "Where the time went", and bench/README.md). With it,
 * `--instances N` runs N instances of the app behind it (round robin), each
 * with its own pool: the pool figures are then the busiest instance's.
 *
 *   npm run bench:storm [-- --operations 1000] [-- --proxy [--instances 2]] [-- --profile] [-- --no-build]
 */
import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import * as mariadb from "mariadb";
import { ChargesClient } from "@charges/client";
import { chargesPerCustomer } from "~/gateway-sim/inspect";
import { slotsBetween, type PoolSlot } from "~/server/db/poolUsage";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { slotPort } from "../scripts/lib/config";
import { BENCH_PORTS, cpuShares, fmt, OWN, pidsNamed, REST, startBenchStack, table } from "./lib";
import { summariseProfile } from "./profileSummary";
import { startProxy } from "./proxy";

const { values: args } = parseArgs({
  options: {
    operations: { type: "string", default: "1000" },
    proxy: { type: "boolean", default: false },
    instances: { type: "string", default: "1" },
    profile: { type: "boolean", default: false },
    "no-build": { type: "boolean", default: false },
  },
});
const OPERATIONS = Number(args.operations);
const GATEWAY_DELAY_MS = 3_000;
const CLIENT_TIMEOUT_MS = 1_000;
/** The Prefer: wait rounds: long enough for the SDK to ask for wait=1, shorter than the gateway. */
const WAIT_ROUND_TIMEOUT_MS = 2_500;
const RAMP_MS = 2_000;
const WATCHDOG_MS = 240_000;

type PoolUsage = { limit: number; recent: PoolSlot[] };

const INSTANCES = Number(args.instances);
if (!(INSTANCES >= 1 && INSTANCES <= 3) || (INSTANCES > 1 && !args.proxy)) {
  throw new Error("--instances takes 1 to 3, and more than 1 needs --proxy (the clients need one address)");
}
const METRICS_TOKEN = randomBytes(24).toString("hex");
// The band's three app ports (the overhead script's extra instances, never started here, use the other two).
const appPorts = [BENCH_PORTS.app, BENCH_PORTS.baseline, BENCH_PORTS.protocolFloor].slice(0, INSTANCES);
const profileDir = args.profile ? mkdtempSync(join(tmpdir(), "charges-storm-profile-")) : undefined;
const profiler = fileURLToPath(new URL("profile.cjs", import.meta.url));
const profiling: Record<string, string> = profileDir
  ? {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${profiler}`,
      BENCH_PROFILE_DIR: profileDir,
    }
  : {};
const stack = await startBenchStack({ GATEWAY_TIMEOUT_MS: "10000", METRICS_TOKEN, ...profiling }, { appPorts });
const appUrls = stack.apps.map((a) => a.url);
const front = args.proxy ? await startProxy(appUrls, slotPort.app(11)) : undefined;
/** Where the clients send their requests: the app, or the proxy in front of it. */
const baseUrl = front?.url ?? stack.url;
/** Whose CPU each round reports (cpuShares): the app, the gateway, the database; the load generator is this process. */
const PROCESSES = {
  app: stack.apps.map((a) => a.pid),
  gateway: stack.processes.filter((p) => p.name === "gateway").map((p) => p.pid),
  MariaDB: pidsNamed("mariadbd"),
  ...(front ? { nginx: [front.pid] } : {}),
};
/** This process's own event-loop delay: the 409 latencies are timed here, so its lag is in them too. */
const ownLoop = monitorEventLoopDelay({ resolution: 10 });
ownLoop.enable();
// Bounded in time: a run that hangs fails loudly instead of waiting forever.
let unresolved = 0;
setTimeout(() => {
  console.error(`storm: ${unresolved} operations unresolved after ${WATCHDOG_MS} ms`);
  void Promise.all([front?.stop(), stack.stop()]).finally(() => process.exit(2));
}, WATCHDOG_MS).unref();

type StormOptions = { attemptTimeoutMs?: number; preferWaitSeconds?: number; profile?: boolean };

/** Starts (first call) or stops and writes (second) the CPU profile of every app process (bench/profile.cjs). */
function signalProfilers() {
  const descendants = (pid: number): number[] => {
    const children = spawnSync("pgrep", ["-P", String(pid)], { encoding: "utf8" })
      .stdout.split("\n")
      .filter(Boolean);
    return [pid, ...children.flatMap((c) => descendants(Number(c)))];
  };
  for (const pid of PROCESSES.app.flatMap(descendants)) process.kill(pid, "SIGUSR2");
}

/** OPERATIONS operations through the SDK, started evenly over `rampMs`; what the client saw, and when. */
async function storm(cardToken: string, rampMs: number, opts: StormOptions = {}) {
  const conflictLatencies: number[] = [];
  let serviceUnavailable = 0;
  let timedOut = 0;
  let attempts = 0;
  let conflicts = 0;
  let waitsApplied = 0;
  const timedFetch: typeof fetch = async (input, init) => {
    const started = performance.now();
    attempts += 1;
    const res = await fetch(input, init).catch((error: Error) => {
      if (error.name === "TimeoutError") timedOut += 1;
      throw error;
    });
    if (res.status === 409) {
      conflicts += 1;
      conflictLatencies.push(performance.now() - started);
    }
    if (res.headers.has("preference-applied")) waitsApplied += 1;
    if (res.status === 503) serviceUnavailable += 1;
    return res;
  };
  const sdk = new ChargesClient({
    baseUrl,
    apiKey: stack.apiKey,
    attemptTimeoutMs: opts.attemptTimeoutMs ?? CLIENT_TIMEOUT_MS,
    deadlineMs: 60_000,
    baseDelayMs: 200,
    ...(opts.preferWaitSeconds === undefined ? {} : { preferWaitSeconds: opts.preferWaitSeconds }),
    fetch: timedFetch,
  });
  const tag = `cus_storm_${randomUUID().slice(0, 6)}`;
  unresolved = OPERATIONS;
  await appLoopDelay(); // starts the app's measure afresh
  ownLoop.reset();
  if (opts.profile) signalProfilers();
  const start = Date.now();
  const { result: results, ...cpu } = await cpuShares(PROCESSES, () =>
    Promise.all(
      Array.from({ length: OPERATIONS }, async (_, i) => {
        await new Promise((r) => setTimeout(r, (i * rampMs) / OPERATIONS));
        return sdk
          .createCharge({ amount_cents: 500, currency: "usd", card_token: cardToken, customer_id: `${tag}_${i}` })
          .finally(() => unresolved--);
      }),
    ),
  );
  const end = Date.now();
  if (opts.profile) signalProfilers();
  const loops = { app: await appLoopDelay(), own: { p99: ownLoop.percentile(99) / 1e6, max: ownLoop.max / 1e6 } };
  // Read now: the app keeps only its last 30 s. Every gateway call was made
  // after `start` and answers GATEWAY_DELAY_MS later, so until then every
  // call made is pending.
  const records = await poolRecords();
  const pool = {
    pending: poolUse(records, start, start + GATEWAY_DELAY_MS),
    answered: poolUse(records, start + GATEWAY_DELAY_MS, end + 100),
    whole: poolUse(records, start, end + 100),
  };
  const sorted = conflictLatencies.sort((a, b) => a - b);
  const counts = { serviceUnavailable, timedOut, attempts, conflicts, waitsApplied };
  return { tag, start, end, results, conflictLatencies: sorted, ...counts, pool, cpu, loops };
}

/**
 * The app's event-loop delay (p99 and max, ms; the worst instance's) since the last call: prom-client's
 * default metrics start their histogram afresh at every scrape of /api/metrics.
 */
async function appLoopDelay() {
  const delays = await Promise.all(
    appUrls.map(async (url) => {
      const res = await fetch(`${url}/api/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      const text = await res.text();
      const ms = (name: string) =>
        1000 * Number(new RegExp(`^charges_${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN);
      return { p99: ms("nodejs_eventloop_lag_p99_seconds"), max: ms("nodejs_eventloop_lag_max_seconds") };
    }),
  );
  return { p99: Math.max(...delays.map((d) => d.p99)), max: Math.max(...delays.map((d) => d.max)) };
}

/** Charges the gateway made more than once for a customer (in the tables of whichever protocol GATEWAY uses). */
async function duplicateCharges(tag: string) {
  const gw = await mariadb.createConnection(connectionOptions(stack.gatewayDatabaseUrl, true));
  const perCustomer = await chargesPerCustomer(gw, stack.gateway, `${tag}_`);
  await gw.end();
  return perCustomer.reduce((sum, n) => sum + n - 1, 0);
}

/** Each instance's own record of its pool, per 100 ms: exact, where a sampled gauge would miss bursts. */
async function poolRecords(): Promise<PoolUsage[]> {
  return Promise.all(
    appUrls.map(async (url) => {
      const res = await fetch(`${url}/api/health`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      return ((await res.json()) as { pool: PoolUsage }).pool;
    }),
  );
}

/** Pool use over [from, to): the busiest instance's most in use, and every instance's connections and waits. */
function poolUse(pools: PoolUsage[], from: number, to: number) {
  const slots = pools.flatMap((pool) => slotsBetween(pool.recent, from, to));
  const acquired = slots.reduce((n, s) => n + s.acquired, 0);
  return {
    limit: pools[0]!.limit,
    maxActive: Math.max(0, ...slots.map((s) => s.maxActive)),
    acquired,
    meanHeldMs: acquired ? slots.reduce((n, s) => n + s.heldMs, 0) / acquired : 0,
    waited: slots.reduce((n, s) => n + s.waited, 0),
  };
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/**
 * The server loads each route on first use and V8 optimises as it goes: without
 * this, a cold first round measured start-up (~1000 timeouts), not the storm.
 */
async function warmUp() {
  const sdk = new ChargesClient({ baseUrl, apiKey: stack.apiKey });
  for (let batch = 0; batch < 5; batch++) {
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        sdk.createCharge({
          amount_cents: 100,
          currency: "usd",
          card_token: "tok_visa",
          customer_id: `cus_warmup_${batch}_${i}`,
        }),
      ),
    );
  }
}

try {
  await warmUp();
  const slow = `tok_slow_${GATEWAY_DELAY_MS}`;
  const rounds = {
    ramped: await quietly(() => storm(slow, RAMP_MS, { profile: args.profile })),
    burst: await quietly(() => storm(slow, 0)),
    control: await quietly(() => storm("tok_visa", 0)),
  };
  const longer = { attemptTimeoutMs: WAIT_ROUND_TIMEOUT_MS };
  const waitRounds = {
    without: await quietly(() => storm(slow, RAMP_MS, { ...longer, preferWaitSeconds: 0 })),
    with: await quietly(() => storm(slow, RAMP_MS, longer)),
  };
  const everyRound = [...Object.values(rounds), ...Object.values(waitRounds)];
  let duplicates = 0;
  for (const round of everyRound) duplicates += await duplicateCharges(round.tag);
  const unavailable = everyRound.reduce((n, r) => n + r.serviceUnavailable, 0);

  type Round = Awaited<ReturnType<typeof storm>>;
  const each = (f: (r: Round) => string | number) => Object.values(rounds).map(f).join(" / ");
  /** A quantile of the round's 409 latencies, scaled by `per`; n/a when it had none. */
  const conflictLatency =
    (q: number, per = 1, digits?: number) =>
    (r: Round) =>
      r.conflictLatencies.length ? fmt(quantile(r.conflictLatencies, q) / per, digits) : "n/a";
  const title =
    `Slow gateway storm (GATEWAY=${stack.gateway}${front ? `, ${INSTANCES} instance(s) behind nginx` : ""}): ` +
    `${OPERATIONS} operations, ` +
    `gateway ${GATEWAY_DELAY_MS} ms, ` +
    `client timeout ${CLIENT_TIMEOUT_MS} ms (ramped over ${RAMP_MS} ms / burst / control on a fast gateway)`;
  table(title, [
    { metric: "operations answered 201", value: each((r) => r.results.filter((x) => x.ok).length) },
    { metric: "duplicate charges at the gateway (must be 0)", value: duplicates },
    { metric: "attempts the client timed out (retried with the same key)", value: each((r) => r.timedOut) },
    { metric: "attempts per operation", value: each((r) => fmt(r.attempts / OPERATIONS, 2)) },
    { metric: "409 answers within the client timeout", value: each((r) => r.conflictLatencies.length) },
    { metric: "409 latency p50 ms", value: each(conflictLatency(0.5)) },
    { metric: "409 latency p99 ms", value: each(conflictLatency(0.99)) },
    { metric: "409 p99 / gateway delay", value: each(conflictLatency(0.99, GATEWAY_DELAY_MS, 3)) },
    { metric: "answers 503 (database or pool unavailable)", value: unavailable },
    { metric: "wall time s", value: each((r) => fmt((r.end - r.start) / 1000)) },
  ]);
  const percent = (name: string) => each((r) => fmt(r.cpu.percentOfACore[name] ?? 0, 0));
  table(
    `Where the time went in each round (ramped / burst / control); CPU: % of one core, of ${rounds.ramped.cpu.cores}`,
    [
      {
        metric: `app (one JavaScript thread${INSTANCES > 1 ? " each, all instances" : ""}) CPU %`,
        value: percent("app"),
      },
      {
        metric: "app event-loop delay p99 / max ms",
        value: each((r) => `${fmt(r.loops.app.p99)}, ${fmt(r.loops.app.max)}`),
      },
      { metric: "load generator (SDK clients, this process) CPU %", value: percent(OWN) },
      {
        metric: "load generator event-loop delay p99 / max ms",
        value: each((r) => `${fmt(r.loops.own.p99)}, ${fmt(r.loops.own.max)}`),
      },
      { metric: "MariaDB CPU %", value: percent("MariaDB") },
      { metric: "gateway simulator CPU %", value: percent("gateway") },
      ...(front ? [{ metric: "nginx CPU %", value: percent("nginx") }] : []),
      {
        metric: "the rest: kernel, other processes CPU %",
        value: percent(REST),
      },
      { metric: "machine busy, % of all cores", value: each((r) => fmt(r.cpu.machineBusyPercent, 0)) },
      { metric: "connections dropped, accept queue full", value: each((r) => r.cpu.listenOverflows) },
    ],
  );
  const perOperation = (n: number) => fmt(n / OPERATIONS, 2);
  table(
    `Prefer: wait (ramped over ${RAMP_MS} ms, attempt timeout ${WAIT_ROUND_TIMEOUT_MS} ms, so the SDK asks for ` +
      `wait=1; round without: preferWaitSeconds 0)`,
    (["without", "with"] as const).map((name) => {
      const r = waitRounds[name];
      return {
        round: `${name} Prefer: wait`,
        "answered 201": r.results.filter((x) => x.ok).length,
        "attempts / operation": perOperation(r.attempts),
        "409s / operation": perOperation(r.conflicts),
        "attempts timed out": r.timedOut,
        "answers with Preference-Applied": r.waitsApplied,
        "wall time s": fmt((r.end - r.start) / 1000),
      };
    }),
  );
  table(`DB pool (limit ${rounds.ramped.pool.whole.limit} per instance), from each instance's per-100 ms record`, [
    { phase: "ramped: gateway calls pending (first 3 s)", ...poolRow(rounds.ramped.pool.pending) },
    { phase: "ramped: calls answered, charges recorded", ...poolRow(rounds.ramped.pool.answered) },
    { phase: "burst: gateway calls pending (first 3 s)", ...poolRow(rounds.burst.pool.pending) },
    { phase: "burst: calls answered, charges recorded", ...poolRow(rounds.burst.pool.answered) },
    { phase: "control: fast gateway, one instant", ...poolRow(rounds.control.pool.whole) },
    { phase: "Prefer: wait rounds (without / with), whole round", ...poolRow(waitRounds.without.pool.whole) },
    { phase: "", ...poolRow(waitRounds.with.pool.whole) },
  ]);
  if (profileDir) printProfiles(profileDir, rounds.ramped.attempts);
  const rampedP99 = quantile(rounds.ramped.conflictLatencies, 0.99) / GATEWAY_DELAY_MS;
  console.log(`\nramped round: 409 p99 / gateway delay = ${fmt(rampedP99, 3)} (target <= 0.1)`);
  const { whole } = rounds.ramped.pool;
  const poolFull = whole.maxActive >= whole.limit || whole.waited > 0;
  if (duplicates > 0 || unavailable > 0 || poolFull) process.exitCode = 1;
} finally {
  await front?.stop();
  await stack.stop();
}
process.exit(process.exitCode ?? 0);

/** Whose code each app process ran during the ramped round, per attempt the clients made in it. */
function printProfiles(dir: string, attempts: number) {
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"))) {
    const { spanMs, busyMs, shares } = summariseProfile(join(dir, file));
    if (busyMs < spanMs / 10) continue; // a process that only listened (the launcher)
    table(
      `CPU profile of app process ${file.replace(".cpuprofile", "")}, ramped round (${fmt(spanMs / 1000)} s, ` +
        `busy ${fmt((100 * busyMs) / spanMs, 0)}% of the span; ${attempts} attempts made by the clients)`,
      shares.map((s) => ({
        "whose code": s.owner,
        ms: fmt(s.ms, 0),
        "% of the span": fmt(s.percent, 1),
        "µs per attempt": s.owner === "idle" ? "" : fmt((1000 * s.ms) / attempts, 0),
      })),
    );
    console.log(`profile: ${join(dir, file)}`);
  }
}

/** A quiet second first, so one round's tail does not overlap the next. */
async function quietly<T>(run: () => Promise<T>): Promise<T> {
  await new Promise((r) => setTimeout(r, 1_000));
  return run();
}

function poolRow(use: ReturnType<typeof poolUse>) {
  return {
    "max in use": use.maxActive,
    "max / limit": fmt(use.maxActive / use.limit, 2),
    "connections handed out": use.acquired,
    "mean held ms": fmt(use.meanHeldMs, 1),
    "requests that waited": use.waited,
  };
}
