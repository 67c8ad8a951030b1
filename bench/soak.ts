/**
 * Soak: hours of mixed traffic, and memory that must stay flat. The production
 * build runs as two app instances (BENCH_PORTS.soakApps) with the simulated
 * gateway and the background sweeper; keys expire after KEY_TTL_MINUTES and the
 * sweeper runs every few seconds, so the tables turn over many times in a run.
 * Operations start at a fixed rate (open loop, whatever the answers take), each
 * on either instance at random:
 *
 *   fresh keyed charges; replays of keys answered in the last 90 s (from the
 *   instance's memory or, on the other one, from the database); a key reused
 *   with another body (422); keyless charges; declines (402); slow gateway
 *   charges with a retry while they are in flight (409); gateway errors and
 *   charge-then-error (503, outcome unknown: the sweeper and the reconciliation
 *   finish them); charges slower than the gateway timeout, retried later;
 *   and a signed-in support user per instance polling the dashboard's tRPC
 *   queries every 2 s.
 *
 * Every 30 s, per app process: heap used after a forced full GC, RSS, external
 * memory, event-loop delay p99 (GET /api/diagnostics, which only
 * BENCHMARK_DIAGNOSTICS=1 turns on), pool use, and the answer latencies of the
 * window. At the end: the curves per 5 minutes, the trend (least-squares slope
 * per hour from minute --from on, with its 95 % interval), a closing sweep and
 * the ledger reconciliation. Exits 1 when, per instance, heap after GC or answer
 * p99 shows significant growth (the slope's 95 % interval above zero) of more
 * than 10 % or 1.5x over the judged minutes (bench/trend.ts), when the ledger
 * does not add up, or on any 500 internal_error or failed request. The samples
 * are kept in .data/soak-<time>.json.
 *
 *   npm run bench:soak -- --minutes 30 [--rate 20] [--from 5] [--no-build]
 */
import { randomInt, randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { slotsBetween } from "~/server/db/poolUsage";
import type { DiagnosticsSample } from "~/server/observability/diagnostics";
import { root } from "../scripts/lib/config";
import { BENCH_PORTS, cpuMs, fmt, processTree, startBenchStack, table } from "./lib";
import { judgeGrowth, leastSquares } from "./trend";

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "30" },
    /** Operations started per second, over both instances (about 1.1 requests each), besides the dashboard. */
    rate: { type: "string", default: "20" },
    /** Where the comparison and the trend start (minutes); default 5, or half of a shorter run. */
    from: { type: "string" },
    "sample-seconds": { type: "string", default: "30" },
    "no-build": { type: "boolean", default: false },
  },
});
const MINUTES = Number(args.minutes);
const RATE = Number(args.rate);
const SAMPLE_MS = Number(args["sample-seconds"]) * 1000;
const FROM_MINUTE = args.from === undefined ? Math.min(5, MINUTES / 2) : Number(args.from);
if (!(MINUTES > 0 && RATE > 0 && SAMPLE_MS >= 1000 && FROM_MINUTE >= 0 && FROM_MINUTE < MINUTES)) {
  throw new Error("--minutes and --rate must be positive, --sample-seconds at least 1, --from below --minutes");
}

/** Thresholds of the verdict: the most growth over the judged minutes, when the growth is significant. */
const HEAP_GROWTH_LIMIT = 1.1;
const P99_GROWTH_LIMIT = 1.5;
/** Samples whose median is compared at each end: a third of those from --from on, 3 to 5. */
const likeWindows = (n: number) => Math.max(1, Math.min(5, Math.floor(n / 3)));

const KEY_TTL_MINUTES = 3;
const TIMINGS = {
  GATEWAY_TIMEOUT_MS: 5_000,
  LEASE_MARGIN_MS: 1_000,
  REAP_AFTER_MS: 15_000,
};
const SLOW_GATEWAY_MS = 1_500;
const TOO_SLOW_GATEWAY_MS = 6_000;
/** Before the first sample: the routes load and V8 optimises, at half the rate. */
const WARM_UP_MS = 20_000;
/** Replays and reuses pick keys answered this recently: well inside the key's lifetime. */
const REPLAY_WITHIN_MS = 90_000;
const DASHBOARD_POLL_MS = 2_000;
const REQUEST_TIMEOUT_MS = 30_000;
/** Past this many operations waiting for answers, new ones are skipped (and counted): the machine is overrun. */
const MAX_OUTSTANDING = 500;

const stack = await startBenchStack(
  {
    BENCHMARK_DIAGNOSTICS: "1",
    IDEMPOTENCY_KEY_TTL_HOURS: String(KEY_TTL_MINUTES / 60),
    SWEEP_INTERVAL_MS: "5000",
    RECONCILE_INTERVAL_MS: "60000",
    ...Object.fromEntries(Object.entries(TIMINGS).map(([k, v]) => [k, String(v)])),
  },
  { appPorts: BENCH_PORTS.soakApps, gatewayPort: BENCH_PORTS.soakGateway, sweeper: true },
);
const apps = stack.apps;
// Interrupted (Ctrl-C): the stack's processes go too.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => void stack.stop().finally(() => process.exit(130)));
}

// ---------------------------------------------------------------- traffic

type Category =
  | "fresh"
  | "replay"
  | "reuse"
  | "keyless"
  | "declined"
  | "slow"
  | "in_flight_retry"
  | "gateway_error"
  | "charge_then_error"
  | "timeout"
  | "timeout_retry"
  | "dashboard";
/** What each kind of request must be answered; anything else is counted as unexpected. */
const EXPECTED: Record<Category, number[]> = {
  fresh: [201],
  replay: [201],
  reuse: [422],
  keyless: [201],
  declined: [402],
  // Either request of the pair can reach its instance first.
  slow: [201, 409],
  in_flight_retry: [409, 201],
  gateway_error: [503],
  charge_then_error: [503],
  timeout: [503],
  timeout_retry: [201, 409],
  dashboard: [200],
};
/** Answers that wait on the gateway's deliberate delay: left out of the latency percentiles. */
const WAITS_ON_PURPOSE = new Set<Category>(["slow", "timeout"]);

type Answer = { app: number; ms: number; category: Category; status: number; code?: string };
let windowAnswers: Answer[] = [];
const outcomes = new Map<string, number>();
let requests = 0;
let skipped = 0;
let outstanding = 0;
const inFlight = new Set<Promise<unknown>>();

const count = (key: string) => outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One POST /api/charges to instance `app`, timed and classified. */
async function charge(app: number, category: Category, body: object, key: string | null) {
  const headers: Record<string, string> = {
    Authorization: `Bearer ${stack.apiKey}`,
    "Content-Type": "application/json",
  };
  if (key !== null) headers["Idempotency-Key"] = key;
  const started = performance.now();
  requests += 1;
  try {
    const res = await fetch(`${apps[app]!.url}/api/charges`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    const code = res.status >= 400 ? (JSON.parse(text) as { error?: { code?: string } }).error?.code : undefined;
    record({ app, ms: performance.now() - started, category, status: res.status, code });
    return res.status;
  } catch (error) {
    record({ app, ms: performance.now() - started, category, status: 0, code: (error as Error).name });
    return 0;
  }
}

function record(answer: Answer) {
  windowAnswers.push(answer);
  const expected = EXPECTED[answer.category].includes(answer.status);
  count(`${answer.category} ${answer.status}${answer.code ? ` ${answer.code}` : ""}${expected ? "" : " (unexpected)"}`);
}

const anyApp = () => randomInt(apps.length);
const bodyWith = (card_token: string) => ({
  amount_cents: randomInt(100, 100_000),
  currency: "usd",
  card_token,
  customer_id: `cus_soak_${randomInt(1_000)}`,
});

/** Keys answered 201 lately, oldest first, for replays and reuses. */
const answered: { key: string; body: ReturnType<typeof bodyWith>; at: number }[] = [];
function recentAnswered() {
  while (answered.length > 0 && answered[0]!.at < Date.now() - REPLAY_WITHIN_MS) answered.shift();
  return answered.length ? answered[randomInt(answered.length)] : undefined;
}

async function keyed(category: Category, token: string) {
  const key = `soak-${randomUUID()}`;
  const body = bodyWith(token);
  if ((await charge(anyApp(), category, body, key)) === 201) answered.push({ key, body, at: Date.now() });
}

/** The operations, with their share of the rate. */
const OPERATIONS: [number, () => Promise<unknown>][] = [
  [30, () => keyed("fresh", "tok_visa")],
  [
    16,
    async () => {
      const old = recentAnswered();
      return old ? charge(anyApp(), "replay", old.body, old.key) : keyed("fresh", "tok_visa");
    },
  ],
  [
    5,
    async () => {
      const old = recentAnswered();
      return old
        ? charge(anyApp(), "reuse", { ...old.body, amount_cents: old.body.amount_cents + 1 }, old.key)
        : keyed("fresh", "tok_visa");
    },
  ],
  [15, () => charge(anyApp(), "keyless", bodyWith("tok_visa"), null)],
  [6, () => keyed("declined", "tok_declined")],
  // A slow gateway charge and the client's retry while it is in flight (409, on either instance).
  [
    12,
    async () => {
      const key = `soak-${randomUUID()}`;
      const body = bodyWith(`tok_slow_${SLOW_GATEWAY_MS}`);
      const first = charge(anyApp(), "slow", body, key);
      await sleep(300);
      await charge(anyApp(), "in_flight_retry", body, key);
      if ((await first) === 201) answered.push({ key, body, at: Date.now() });
    },
  ],
  [4, () => charge(anyApp(), "gateway_error", bodyWith("tok_error"), `soak-${randomUUID()}`)],
  [2, () => charge(anyApp(), "charge_then_error", bodyWith("tok_charge_then_error"), `soak-${randomUUID()}`)],
  // Slower than GATEWAY_TIMEOUT_MS: 503, the gateway charges anyway; the retry after it answered gets that charge.
  [
    2,
    async () => {
      const key = `soak-${randomUUID()}`;
      const body = bodyWith(`tok_slow_${TOO_SLOW_GATEWAY_MS}`);
      await charge(anyApp(), "timeout", body, key);
      await sleep(TOO_SLOW_GATEWAY_MS + 2_000);
      await charge(anyApp(), "timeout_retry", body, key);
    },
  ],
];
const TOTAL_WEIGHT = OPERATIONS.reduce((n, [w]) => n + w, 0);
function pickOperation() {
  let r = randomInt(TOTAL_WEIGHT);
  for (const [weight, run] of OPERATIONS) {
    r -= weight;
    if (r < 0) return run;
  }
  return OPERATIONS[0]![1];
}

/** Starts operations at `rate` per second until `until` (a performance.now() time), without waiting for answers. */
async function drive(until: number, rate = RATE) {
  const started = performance.now();
  for (let n = 0; ; n++) {
    const due = started + (n * 1000) / rate;
    if (due >= until) return;
    if (due > performance.now()) await sleep(due - performance.now());
    if (outstanding >= MAX_OUTSTANDING) {
      skipped += 1;
      continue;
    }
    outstanding += 1;
    const op = pickOperation()().finally(() => {
      outstanding -= 1;
      inFlight.delete(op);
    });
    inFlight.add(op);
  }
}

// ---------------------------------------------------------------- dashboard

/** A support user signed in on each instance through /api/auth (test/staffHttp.ts), a few tries each. */
async function signInDashboards() {
  const { createStaffAccount, signedIn } = await import("../test/staffHttp");
  const account = await createStaffAccount("support");
  return Promise.all(
    apps.map(async (app) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await signedIn(account, { baseUrl: app.url });
        } catch (error) {
          if (attempt >= 5) throw error;
          await sleep(2_000);
        }
      }
    }),
  );
}
type Browsers = Awaited<ReturnType<typeof signInDashboards>>;

/** Each signed-in user polls the dashboard's queries on its instance. */
async function pollDashboard(browsers: Browsers, until: number) {
  const queries: [string, (latestId?: string) => unknown][] = [
    ["requests.list", () => ({ limit: 25 })],
    ["requests.count", () => ({})],
    ["requests.byId", (id) => (id ? { id } : undefined)],
    ["rollout.status", () => undefined],
    ["requests.list", () => ({ limit: 25, status: "402" })],
    ["ledger.status", () => undefined],
    ["sweep.status", () => undefined],
    ["customers.charges", () => ({ customerId: `cus_soak_${randomInt(1_000)}` })],
    ["requests.reuseCounts", () => undefined],
  ];
  await Promise.all(
    browsers.map(async (browser, app) => {
      let latestId: string | undefined;
      for (let turn = app * 4; performance.now() < until; turn++) {
        const [name, input] = queries[turn % queries.length]!;
        const started = performance.now();
        requests += 1;
        try {
          const res = await browser.query(name, input(latestId));
          record({
            app,
            ms: performance.now() - started,
            category: "dashboard",
            status: res.status,
            code: res.error?.code,
          });
          if (name === "requests.list" && res.data?.items?.[0]?.id) latestId = res.data.items[0].id as string;
        } catch (error) {
          record({
            app,
            ms: performance.now() - started,
            category: "dashboard",
            status: 0,
            code: (error as Error).name,
          });
        }
        await sleep(DASHBOARD_POLL_MS);
      }
    }),
  );
}

// ---------------------------------------------------------------- samples

type Sample = {
  at: number;
  minute: number;
  app: number;
  heapAfterGc: number;
  /** Heap used and RSS as the process ran, before the forced collection. */
  heapBeforeGc: number;
  rssBeforeGc: number;
  rss: number;
  external: number;
  arrayBuffers: number;
  heapTotal: number;
  code: number;
  gcMs: number;
  loopP99: number;
  loopMax: number;
  poolMax: number;
  poolLimit: number;
  poolWaited: number;
  answers: number;
  reqPerSecond: number;
  /** CPU time the process spent per answer in the window (from /proc): its own cost, whatever else the machine runs. */
  cpuMsPerAnswer: number;
  p50: number;
  p99: number;
  dashboardP99: number;
  unexpected: number;
  load1: number;
  diagnostics: DiagnosticsSample;
};
const samples: Sample[] = [];
const missedSamples: string[] = [];
const lastCpu = new Map<number, number>();
const others: { minute: number; name: string; rss: number }[] = [];

const quantile = (xs: number[], q: number) => {
  const sorted = xs.slice().sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0;
};
const median = (xs: number[]) => quantile(xs, 0.5);

/**
 * Resident MiB of a process from /proc: all of it (VmRSS), anonymous memory, and mapped files (the binary,
 * libraries).
 */
function residentOf(pid: number): { rss: number; anon: number; file: number } {
  let status = "";
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    // gone
  }
  const mib = (field: string) => fmt(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024);
  return { rss: mib("VmRSS"), anon: mib("RssAnon"), file: mib("RssFile") };
}
/** Resident MiB of a process and its descendants (the gateway and the sweeper run under a `tsx` wrapper). */
const rssOf = (pid: number) => fmt(processTree(pid).reduce((n, p) => n + residentOf(p.pid).rss, 0));

async function sample(startedAt: number, previousAt: number) {
  const at = performance.now();
  const answers = windowAnswers;
  windowAnswers = [];
  const minute = fmt((at - startedAt) / 60_000, 2);
  const rows: Record<string, string | number>[] = [];
  // One at a time: each collection stops its process's event loop for a moment.
  for (const [i, app] of apps.entries()) {
    // A process too busy to answer within the timeout misses this sample (counted), rather than ending the run.
    const d = await fetch(`${app.url}/api/diagnostics`, { signal: AbortSignal.timeout(2 * REQUEST_TIMEOUT_MS) }).then(
      async (res) => {
        if (res.status !== 200) throw new Error(`GET ${app.url}/api/diagnostics: ${res.status} ${await res.text()}`);
        return (await res.json()) as DiagnosticsSample;
      },
      (error: Error) => {
        missedSamples.push(`t = ${minute} min, app ${i}: ${error.name} ${error.message}`);
        console.log(`sample missed: ${missedSamples.at(-1)}`);
        return null;
      },
    );
    if (!d) continue;
    const cpu = cpuMs(d.pid);
    const cpuSpent = cpu - (lastCpu.get(i) ?? cpu);
    lastCpu.set(i, cpu);
    const own = answers.filter((a) => a.app === i);
    const timed = own.filter((a) => a.category !== "dashboard" && !WAITS_ON_PURPOSE.has(a.category)).map((a) => a.ms);
    const slots = slotsBetween(d.pool.recent, Date.now() - (at - previousAt));
    const s: Sample = {
      at,
      minute,
      app: i,
      heapAfterGc: d.memory.heapUsed,
      heapBeforeGc: d.beforeGc?.heapUsed ?? 0,
      rssBeforeGc: d.beforeGc?.rss ?? 0,
      rss: d.memory.rss,
      external: d.memory.external,
      arrayBuffers: d.memory.arrayBuffers,
      heapTotal: d.memory.heapTotal,
      code: d.memory.code,
      gcMs: d.gcMs,
      loopP99: d.eventLoopDelayMs.p99,
      loopMax: d.eventLoopDelayMs.max,
      poolMax: Math.max(0, ...slots.map((x) => x.maxActive)),
      poolLimit: d.pool.limit,
      poolWaited: slots.reduce((n, x) => n + x.waited, 0),
      answers: own.length,
      reqPerSecond: fmt(own.length / Math.max(0.001, (at - previousAt) / 1000)),
      cpuMsPerAnswer: own.length ? fmt(cpuSpent / own.length, 2) : 0,
      p50: fmt(quantile(timed, 0.5)),
      p99: fmt(quantile(timed, 0.99)),
      dashboardP99: fmt(
        quantile(
          own.filter((a) => a.category === "dashboard").map((a) => a.ms),
          0.99,
        ),
      ),
      unexpected: own.filter((a) => !EXPECTED[a.category].includes(a.status)).length,
      load1: fmt(loadavg()[0]!, 2),
      diagnostics: d,
    };
    samples.push(s);
    rows.push({
      app: `app ${i} (pid ${d.pid})`,
      "heap after GC MiB": s.heapAfterGc,
      "heap / RSS before GC": `${s.heapBeforeGc} / ${s.rssBeforeGc}`,
      "RSS MiB": s.rss,
      "external MiB": s.external,
      "loop p99 ms": s.loopP99,
      "pool max / limit": `${s.poolMax}/${s.poolLimit}`,
      "pool waits": s.poolWaited,
      "req/s": s.reqPerSecond,
      "CPU ms / answer": s.cpuMsPerAnswer,
      "p50 ms": s.p50,
      "p99 ms": s.p99,
      "dashboard p99 ms": s.dashboardP99,
      unexpected: s.unexpected,
      "answers in memory": d.retained?.["idempotency: answers remembered"] ?? "",
    });
  }
  for (const p of stack.processes.filter((p) => p.name !== "app"))
    others.push({ minute, name: p.name, rss: rssOf(p.pid) });
  const otherRss = others
    .filter((o) => o.minute === minute)
    .map((o) => `${o.name} ${o.rss} MiB`)
    .join(", ");
  table(
    `t = ${minute} min (load ${loadavg()
      .map((l) => fmt(l, 2))
      .join(" ")}; ${requests} requests so far, ${skipped} skipped; ${otherRss})`,
    rows,
  );
}

// ---------------------------------------------------------------- trend and verdict

/** What is judged, and the growth over the judged minutes beyond which significant growth fails the run. */
const JUDGED: Partial<Record<string, number>> = {
  "heap after GC MiB": HEAP_GROWTH_LIMIT,
  "answer p99 ms": P99_GROWTH_LIMIT,
};

/**
 * Per instance, every measure's least-squares trend from minute --from (with its slope's 95 % interval); heap
 * after GC and answer p99 are judged on it (bench/trend.ts). The medians of like windows at each end are printed
 * beside it, for reading, not for the verdict: three noisy windows at each end once made a 2x "growth".
 */
function verdict() {
  const failures: string[] = [];
  const trend: Record<string, string | number>[] = [];
  const comparison: Record<string, string | number>[] = [];
  const judged: Record<string, string | number>[] = [];
  for (const i of apps.keys()) {
    const own = samples.filter((s) => s.app === i && s.minute >= FROM_MINUTE - 0.05);
    const k = likeWindows(own.length);
    const first = own.slice(0, k);
    const last = own.slice(-k);
    for (const [metric, pick] of [
      ["heap after GC MiB", (s: Sample) => s.heapAfterGc],
      ["RSS MiB", (s: Sample) => s.rss],
      ["RSS before GC MiB", (s: Sample) => s.rssBeforeGc],
      ["external MiB", (s: Sample) => s.external],
      ["answer p99 ms", (s: Sample) => s.p99],
      ["event-loop p99 ms", (s: Sample) => s.loopP99],
      ["CPU ms / answer", (s: Sample) => s.cpuMsPerAnswer],
    ] as const) {
      const points = own.map((s) => ({ minute: s.minute, value: pick(s) }));
      const line = leastSquares(points);
      const perHour = (perMinute: number) => fmt(perMinute * 60, 2);
      trend.push({
        app: i,
        metric,
        "slope per hour": line ? perHour(line.slopePerMinute) : "",
        "95 % interval": line ? `${perHour(line.slopeInterval[0])} to ${perHour(line.slopeInterval[1])}` : "",
        mean: fmt(own.reduce((n, s) => n + pick(s), 0) / Math.max(1, own.length)),
      });
      const startValue = median(first.map(pick));
      const endValue = median(last.map(pick));
      comparison.push({
        app: i,
        metric,
        [`median, first ${k} from min ${fmt(FROM_MINUTE)}`]: fmt(startValue),
        [`median, last ${k}`]: fmt(endValue),
        "end / start": startValue > 0 ? fmt(endValue / startValue, 3) : "",
      });
      const limit = JUDGED[metric];
      if (limit === undefined) continue;
      const growth = judgeGrowth(points, limit);
      judged.push({ app: i, metric, verdict: growth.fails ? "FAIL" : "ok", growth: growth.text });
      if (growth.fails) failures.push(`app ${i}: ${metric} ${growth.text}`);
    }
  }
  table(`Trend from minute ${fmt(FROM_MINUTE)} (least squares over every sample; slope's 95 % interval)`, trend);
  table("Start against end (medians of like windows; for reading, not the verdict)", comparison);
  table("Verdict: fails on significant growth (slope's interval above 0) beyond the limit", judged);
  return failures;
}

/**
 * The curves per 5 minutes (or per fifth of a shorter run): the sample nearest each mark, p99 as the block's
 * median.
 */
function curves() {
  const step = MINUTES >= 10 ? 5 : Math.max(SAMPLE_MS / 60_000, MINUTES / 5);
  const rows: Record<string, string | number>[] = [];
  for (let mark = 0; mark <= MINUTES + 1e-9; mark += step) {
    const row: Record<string, string | number> = { minute: fmt(mark, 1) };
    for (const i of apps.keys()) {
      const own = samples.filter((s) => s.app === i);
      const nearest = own.reduce(
        (best, s) => (Math.abs(s.minute - mark) < Math.abs(best.minute - mark) ? s : best),
        own[0]!,
      );
      const block = own.filter((s) => s.minute > mark - step + 1e-9 && s.minute <= mark + 1e-9);
      row[`app ${i} heap after GC`] = nearest.heapAfterGc;
      row[`app ${i} RSS`] = nearest.rss;
      row[`app ${i} RSS before GC`] = nearest.rssBeforeGc;
      row[`app ${i} p99`] = block.length ? fmt(median(block.map((s) => s.p99))) : "";
      row[`app ${i} CPU ms/answer`] = block.length ? fmt(median(block.map((s) => s.cpuMsPerAnswer)), 2) : "";
    }
    rows.push(row);
  }
  table(`Curves per ${fmt(step, 1)} minutes (MiB; p99 ms: median of the block's windows)`, rows);
}

/** Where each instance's resident size goes, at the last sample. */
function residentSize() {
  const rows = apps.map((_, i) => {
    const last = samples.filter((s) => s.app === i).at(-1)!.diagnostics;
    const d = last.memory;
    const proc = residentOf(last.pid);
    return {
      app: i,
      RSS: d.rss,
      "mapped files (node binary, libraries)": proc.file,
      anonymous: proc.anon,
      "heap committed (heapTotal)": d.heapTotal,
      "heap used after GC": d.heapUsed,
      "of it: old space": d.spaces.old_space ?? 0,
      "code (in heap)": d.code,
      "large objects": d.spaces.large_object_space ?? 0,
      "external (Buffers, ArrayBuffers)": d.external,
      "V8 malloc": d.mallocedMemory,
      "anonymous - heapTotal - external (native: allocator, threads, WASM)": fmt(proc.anon - d.heapTotal - d.external),
    };
  });
  table("Where the resident size goes at the end (MiB)", rows);
  // What the processes keep between requests (src/server/observability/retained.ts), from minute --from to the end.
  const retained = samples
    .filter((s) => s.minute >= FROM_MINUTE - 0.05 && s.diagnostics.retained)
    .filter(
      (s, i, all) => i === all.findIndex((x) => x.app === s.app) || all.findLastIndex((x) => x.app === s.app) === i,
    )
    .map((s) => ({ app: s.app, minute: s.minute, ...s.diagnostics.retained }));
  if (retained.length) table("Entries kept in memory between requests, first and last sample from --from", retained);
}

// ---------------------------------------------------------------- run

/**
 * Once the last leases have run out, sweeps (finishing what nobody retried)
 * until nothing is left in progress: requests whose clients gave up may still
 * be queued in the apps when the traffic stops. How many are left, if any.
 */
async function settle(): Promise<number> {
  const { runSweep } = await import("~/server/sweep/runSweep");
  const { recordsInProgress } = await import("~/server/idempotency/reading");
  const { CHARGES_ROUTE } = await import("~/server/charges/chargeOperation");
  await sleep(TIMINGS.GATEWAY_TIMEOUT_MS + TIMINGS.LEASE_MARGIN_MS);
  const deadline = Date.now() + 180_000;
  for (;;) {
    await runSweep({ reapAfterMs: 0, reconcile: false });
    const left = (await recordsInProgress(CHARGES_ROUTE)).length;
    if (left === 0 || Date.now() > deadline) return left;
    console.log(`${left} records still in progress; sweeping again`);
    await sleep(2_000);
  }
}

const failures: string[] = [];
const startedAtDate = new Date();
try {
  const browsers = await signInDashboards();
  console.log(`warm-up: each kind of operation twice, then ${WARM_UP_MS / 1000} s at ${RATE / 2} operations/s`);
  for (const [, operation] of [...OPERATIONS, ...OPERATIONS]) await operation();
  await drive(performance.now() + WARM_UP_MS, RATE / 2);
  windowAnswers = [];
  const t0 = performance.now();
  const until = t0 + MINUTES * 60_000;
  console.log(
    `soak: ${MINUTES} min, ${RATE} operations/s over ${apps.map((a) => a.url).join(" and ")}, ` +
      `keys expire after ${KEY_TTL_MINUTES} min, sampled every ${SAMPLE_MS / 1000} s, ` +
      `verdict from minute ${fmt(FROM_MINUTE)}`,
  );
  const sampling = (async () => {
    let previous = t0;
    for (let i = 0; ; i++) {
      const due = t0 + i * SAMPLE_MS;
      if (due > until + 1) break;
      if (due > performance.now()) await sleep(due - performance.now());
      await sample(t0, previous);
      previous = due;
    }
  })();
  await Promise.all([drive(until), pollDashboard(browsers, until), sampling]);
  console.log(`\ntraffic stopped; waiting for ${inFlight.size} operations in flight`);
  await Promise.allSettled([...inFlight]);

  curves();
  failures.push(...verdict());
  residentSize();
  table(
    "Answers by kind (whole run)",
    [...outcomes.entries()].sort().map(([answer, n]) => ({ answer, n })),
  );
  const broken = [...outcomes.entries()].filter(([k]) =>
    / (0|500 internal_error|500 internal_server_error) /i.test(`${k} `),
  );
  if (broken.length)
    failures.push(`failed requests or internal errors: ${broken.map(([k, n]) => `${k}: ${n}`).join(", ")}`);
  if (skipped) console.log(`${skipped} operations skipped: more than ${MAX_OUTSTANDING} were waiting for answers`);
  if (missedSamples.length) console.log(`${missedSamples.length} samples missed:\n  ${missedSamples.join("\n  ")}`);

  // Finish what nobody retried; then the whole run's ledger must add up.
  await settle();
  const { checkLedgerInvariants, describeReport } = await import("~/server/ledger/invariants");
  const report = await checkLedgerInvariants({ since: startedAtDate });
  console.log(`\nledger after the run: ${describeReport(report)}`);
  if (!report.ok) failures.push("the ledger does not add up");

  const file = path.join(root, `.data/soak-${startedAtDate.toISOString().replace(/[:.]/g, "-")}.json`);
  mkdirSync(path.dirname(file), { recursive: true });
  const summary = {
    minutes: MINUTES,
    rate: RATE,
    from: FROM_MINUTE,
    requests,
    skipped,
    missedSamples,
    outcomes: Object.fromEntries(outcomes),
  };
  writeFileSync(file, JSON.stringify({ summary, samples, others, ledger: describeReport(report), failures }, null, 1));
  console.log(`samples: ${path.relative(root, file)}`);
} catch (error) {
  failures.push(String(error));
} finally {
  await stack.stop();
}
if (failures.length) {
  console.error(`\nFAILED:\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log("\nsoak passed: no significant growth of heap after GC or p99 beyond the limits, ledger adds up");
process.exit(0);
