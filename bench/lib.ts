/**
 * Shared set-up for the benchmarks: a stack of its own, all on loopback, moved
 * by TEST_SLOT like the tests' (slot 0: database charges_bench, gateway on
 * :4125, the production build of the app on :3115; see slotPort).
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import autocannon from "autocannon";
import type { GatewayKind } from "~/gateway-sim/inspect";
import { adminDatabaseUrl, gatewayEnv, slotDatabase, slotPort } from "../scripts/lib/config";
import { createDatabase } from "../scripts/lib/mariadbServer";
import { prepareDatabase } from "../scripts/lib/prepareDatabase";
import { run, startApp, startGateway, startSweeper, type Service } from "../scripts/lib/processes";

/** Where the benchmark stack listens (this TEST_SLOT's band); `floor` is bench/replay.ts's reference server. */
export const BENCH_PORTS = {
  app: slotPort.app(15),
  floor: slotPort.app(16),
  baseline: slotPort.app(17),
  /** bench/overhead.ts: the layer off plus a bare claim and completion (BENCHMARK_SKIP_IDEMPOTENCY=floor). */
  protocolFloor: slotPort.app(14),
  gateway: slotPort.gateway(15),
  /** bench/soak.ts: its own two app instances and gateway, so that it can run beside the other benchmarks. */
  soakApps: [slotPort.app(18), slotPort.app(19)],
  soakGateway: slotPort.gateway(18),
};

/**
 * The benchmark's stack. `baseline` also starts two more instances of the same
 * build on their own ports, with BENCHMARK_SKIP_IDEMPOTENCY=1 and =floor (bench/overhead.ts).
 * `appPorts` starts that many instances of the app instead of the one on
 * BENCH_PORTS.app (`url` and `pid` are the first's, `apps` all of them),
 * `gatewayPort` moves the gateway, and `sweeper` starts the background sweeper
 * with the same environment (bench/soak.ts).
 */
export async function startBenchStack(
  extraEnv: Record<string, string> = {},
  {
    baseline = false,
    fresh = true,
    appPorts = [BENCH_PORTS.app],
    gatewayPort = BENCH_PORTS.gateway,
    sweeper = false,
  }: { baseline?: boolean; fresh?: boolean; appPorts?: number[]; gatewayPort?: number; sweeper?: boolean } = {},
) {
  const base = new URL(adminDatabaseUrl());
  base.pathname = `/${slotDatabase("charges_bench")}`;
  const databaseUrl = base.toString();
  base.pathname = `/${slotDatabase("charges_bench")}_gateway`;
  const gatewayDatabaseUrl = base.toString();
  // GATEWAY=stripe benchmarks the Stripe adapter against the simulator's Stripe mode.
  const gateway = gatewayEnv(`http://127.0.0.1:${gatewayPort}`, { realStripeAllowed: false });
  const env = {
    DATABASE_URL: databaseUrl,
    ...gateway,
    SESSION_SECRET: randomBytes(32).toString("hex"),
    TOTP_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    DATABASE_POOL_SIZE: process.env.BENCH_POOL_SIZE ?? "10",
    ...extraEnv,
  };
  Object.assign(process.env, env);
  await prepareDatabase(databaseUrl, { fresh });
  await createDatabase(gatewayDatabaseUrl, { dropFirst: true });
  if (!process.argv.includes("--no-build")) await run("next", ["build"], { ...env, NODE_ENV: "production" });
  const services: Service[] = [];
  services.push(await startGateway({ port: gatewayPort, databaseUrl: gatewayDatabaseUrl, quiet: true }));
  const apps: Service[] = [];
  for (const port of appPorts) apps.push(await startApp({ port, env, quiet: true }));
  services.push(...apps);
  const app = apps[0]!;
  if (sweeper) services.push(startSweeper(env, { quiet: true }));
  const withSwitch = async (port: number, value: "1" | "floor") => {
    const service = await startApp({ port, env: { ...env, BENCHMARK_SKIP_IDEMPOTENCY: value }, quiet: true });
    services.push(service);
    return service;
  };
  const withoutIdempotency = baseline ? await withSwitch(BENCH_PORTS.baseline, "1") : undefined;
  const protocolFloor = baseline ? await withSwitch(BENCH_PORTS.protocolFloor, "floor") : undefined;
  const { createApiClient } = await import("~/server/auth/apiClients");
  const { apiKey } = await createApiClient("bench");
  return {
    url: app.url,
    pid: app.child.pid!,
    apps: apps.map((a) => ({ url: a.url, pid: a.child.pid! })),
    /** Every process of the stack (gateway, apps, sweeper), by name and pid. */
    processes: services.map((s) => ({ name: s.name, pid: s.child.pid! })),
    baselineUrl: withoutIdempotency?.url,
    baselinePid: withoutIdempotency?.child.pid,
    floorUrl: protocolFloor?.url,
    floorPid: protocolFloor?.child.pid,
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
export async function load({
  until,
  ...opts
}: autocannon.Options & { url: string; until?: Promise<unknown> }): Promise<Load> {
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ connections: 20, duration: until ? 600 : 8, ...opts }, (error, res) =>
      error ? reject(error) : resolve(res),
    );
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

/**
 * CPU time (user + system, ms) used so far by processes and their descendants,
 * from /proc: what a request costs the app itself, whatever else the machine runs.
 */
export function cpuMs(...pids: number[]): number {
  const stats = processTree(...pids);
  return stats.reduce((n, s) => n + s.ticks, 0) * (1000 / CLOCK_TICKS);
}
const CLOCK_TICKS = 100;

/** The running processes' ids, as /proc lists them. */
const runningPids = () => readdirSync("/proc").filter((d) => /^\d+$/.test(d));

/** Processes and their descendants (a `tsx` command is a wrapper around the node process that does the work). */
export function processTree(...pids: number[]): { pid: number; ticks: number }[] {
  const stats = runningPids().flatMap((d) => {
    try {
      const fields = readFileSync(`/proc/${d}/stat`, "utf8")
        .replace(/^.*\) /, "")
        .split(" ");
      return [{ pid: Number(d), ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) }];
    } catch {
      return [];
    }
  });
  const tree = new Set(pids);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of stats) {
      if (!tree.has(s.pid) && tree.has(s.ppid)) {
        tree.add(s.pid);
        grew = true;
      }
    }
  }
  return stats.filter((s) => tree.has(s.pid));
}

/** The machine's CPU since boot, in ms of all cores together: busy (not idle, not waiting for I/O) and total. */
function machineCpuMs(): { busy: number; total: number } {
  const [, ...fields] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
  const ticks = fields.map(Number);
  const total = ticks.reduce((n, t) => n + t, 0);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  return { busy: (total - idle) * (1000 / CLOCK_TICKS), total: total * (1000 / CLOCK_TICKS) };
}

/** The pids of every running process with this command name (`mariadbd`). */
export function pidsNamed(name: string): number[] {
  return runningPids()
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/comm`, "utf8").trim() === name;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * Connections the kernel dropped because a listening socket's accept queue was
 * full (TcpExt ListenOverflows, every socket, since boot): each costs its
 * client TCP's one-second retransmission of the handshake.
 */
function listenOverflows(): number {
  const [names, values] = readFileSync("/proc/net/netstat", "utf8")
    .split("\n")
    .filter((line) => line.startsWith("TcpExt:"))
    .map((line) => line.split(/\s+/));
  return Number(values?.[names?.indexOf("ListenOverflows") ?? -1] ?? 0);
}

export const OWN = "load generator (this process)";
export const REST = "everything else (kernel, other processes)";

/**
 * Where the CPU went while `run` ran: each named process tree's share of one
 * core (100 = one core busy the whole time), this process's own, the rest of
 * the machine's busy time (other processes and the kernel's own work, such as
 * loopback networking), and the connections dropped at a full accept queue.
 * What tells a latency the machine sets from one the code sets.
 */
export async function cpuShares<T>(processes: Record<string, number[]>, run: () => Promise<T>) {
  const sample = () => ({
    own: process.cpuUsage(),
    trees: Object.fromEntries(Object.entries(processes).map(([name, pids]) => [name, cpuMs(...pids)])),
    machine: machineCpuMs(),
    overflows: listenOverflows(),
    at: performance.now(),
  });
  const before = sample();
  const result = await run();
  const after = sample();
  const wallMs = after.at - before.at;
  const ownUs = after.own.user + after.own.system - before.own.user - before.own.system;
  const percentOfACore: Record<string, number> = Object.fromEntries([
    ...Object.keys(processes).map((name) => [name, (100 * (after.trees[name]! - before.trees[name]!)) / wallMs]),
    [OWN, (100 * ownUs) / 1000 / wallMs],
  ]);
  const busyMs = after.machine.busy - before.machine.busy;
  const accounted = Object.values(percentOfACore).reduce((n, p) => n + p, 0);
  percentOfACore[REST] = Math.max(0, (100 * busyMs) / wallMs - accounted);
  return {
    result,
    percentOfACore,
    machineBusyPercent: (100 * busyMs) / (after.machine.total - before.machine.total),
    cores: cpus().length, // every CPU /proc/stat counts, as machineBusyPercent does
    listenOverflows: after.overflows - before.overflows,
  };
}

/** What one run of an interleaved comparison loads: a URL and its requests; `pid`: whose CPU to measure. */
export type LoadSpec = { url: string; requests?: autocannon.Request[]; pid?: number };
export type Interleaved = {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
  slices: number[];
  /** CPU ms the measured process spent per request answered (when a pid was given). */
  cpuMsPerRequest?: number;
  /** CPU ms MariaDB (every mariadbd) spent per request answered during this run's slices. */
  databaseCpuMsPerRequest: number;
};

/**
 * Several runs compared inside one benchmark: each warmed up, then `rounds`
 * slices of `seconds` each, the order rotating every round, so that the load
 * other work puts on a shared machine meanwhile falls on every run alike.
 * req/s is over all of a run's slices; p50 and p99 are the medians of its slices'.
 */
export async function interleaved<K extends string>(
  runs: Record<K, LoadSpec>,
  { rounds = 6, seconds = 3, warmupSeconds = 8 } = {},
): Promise<Record<K, Interleaved>> {
  const names = Object.keys(runs) as K[];
  // Long enough for the JIT, Next.js's lazily loaded route code and the pool's connections: with 2 s, every
  // run's slices still rose through all six rounds (2026-12-04, e.g. 306 to 651 req/s), which skews the ratios
  // towards whichever run happened to warm up faster.
  for (const name of names) await load({ ...runs[name], duration: warmupSeconds });
  const slices = Object.fromEntries(names.map((n) => [n, [] as Load[]])) as Record<K, Load[]>;
  const cpu = Object.fromEntries(names.map((n) => [n, 0])) as Record<K, number>;
  const databaseCpu = Object.fromEntries(names.map((n) => [n, 0])) as Record<K, number>;
  // The database shares this machine's cores with the app: what a run makes it do slows the app down too.
  const database = pidsNamed("mariadbd");
  const databaseMs = () => cpuMs(...database);
  for (let round = 0; round < rounds; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]!);
    for (const name of order) {
      const { pid, ...spec } = runs[name];
      const before = pid ? cpuMs(pid) : 0;
      const databaseBefore = databaseMs();
      slices[name].push(await load({ ...spec, duration: seconds }));
      if (pid) cpu[name] += cpuMs(pid) - before;
      databaseCpu[name] += databaseMs() - databaseBefore;
    }
  }
  const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  return Object.fromEntries(
    names.map((n) => {
      const own = slices[n];
      const rps = own.reduce((sum, l) => sum + l.total, 0) / (own.length * seconds);
      const failures = own.reduce((sum, l) => sum + l.errors + l.non2xx, 0);
      const answered = own.reduce((sum, l) => sum + l.total, 0);
      const cpuMsPerRequest = runs[n].pid && answered ? cpu[n] / answered : undefined;
      const [p50, p99] = [median(own.map((l) => l.p50)), median(own.map((l) => l.p99))];
      const databaseCpuMsPerRequest = answered ? databaseCpu[n] / answered : 0;
      return [n, { rps, p50, p99, failures, slices: own.map((l) => l.rps), cpuMsPerRequest, databaseCpuMsPerRequest }];
    }),
  ) as Record<K, Interleaved>;
}

export function chargeRequest(apiKey: string, opts: { key?: () => string; body?: object } = {}) {
  const body = JSON.stringify(opts.body ?? { amount_cents: 1000, currency: "usd", card_token: "tok_visa" });
  return {
    method: "POST" as const,
    path: "/api/charges",
    headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    body,
    setupRequest: (req: autocannon.Request) =>
      opts.key ? { ...req, headers: { ...req.headers, "Idempotency-Key": opts.key() } } : req,
  };
}

export function table(title: string, rows: Record<string, string | number>[]) {
  console.log(`\n${title}`);
  console.table(rows);
}

export const fmt = (n: number, digits = 1) => Number(n.toFixed(digits));

/** One interleaved run as a row of the tables the benchmarks print. */
export const interleavedRow = (run: string, x: Interleaved) => ({
  run,
  "req/s": fmt(x.rps),
  "p50 ms": x.p50,
  "p99 ms": x.p99,
  failures: x.failures,
  "app CPU ms / request": fmt(x.cpuMsPerRequest ?? 0, 2),
  "MariaDB CPU ms / request": fmt(x.databaseCpuMsPerRequest, 2),
  "req/s per slice": x.slices.map((s) => fmt(s, 0)).join(" "),
});

/** A progress line for long seeding, rewritten in place: "records 1 250 000 / 5 000 000 (25 %), 38 s". */
export function progress(what: string, total: number) {
  const started = performance.now();
  let last = 0;
  return (done: number) => {
    const now = performance.now();
    if (done < total && now - last < 1_000) return;
    last = now;
    const percent = Math.floor((done / total) * 100);
    const seconds = fmt((now - started) / 1000);
    const line = `${what} ${done.toLocaleString("en")} / ${total.toLocaleString("en")} (${percent} %), ${seconds} s`;
    process.stdout.write(process.stdout.isTTY ? `\r${line}${done >= total ? "\n" : ""}` : `${line}\n`);
  };
}
