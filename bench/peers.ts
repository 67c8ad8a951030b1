/**
 * This project's idempotency layer side by side with what people use instead,
 * on the same build, route, gateway simulator, database and charge insert
 * (issue 28). Four instances of the app, one per stack:
 *   charges                     this project's layer (the normal route)
 *   node-idempotency + Redis    @node-idempotency/core with its Redis storage (BENCHMARK_PEER)
 *   node-idempotency + memory   the same with its in-memory storage
 *   no layer                    BENCHMARK_SKIP_IDEMPOTENCY=1: a retry is a new charge
 * How the peer is put in front of the route: src/server/benchmark/peers.ts.
 *
 * 1. Speed: fresh keys and replays of finished keys, every stack, interleaved
 *    in slices (bench/lib.ts `interleaved`), with the app's CPU per request.
 * 2. Faults, each stack in turn, every operation through the SDK with the same
 *    key until a final answer or its deadline: the slow-gateway storm, a SIGKILL
 *    of the app with operations in flight and a restart, a Redis crash and
 *    restart, and a death between the gateway's answer and saving it. Counted per
 *    stack and round: duplicate gateway charges, gateway charges the app never
 *    recorded, operations left blocked (bench/peersVerdict.ts).
 *
 * Exits 1 when a run failed, a speed slice had failures, or this project's layer
 * did not end a fault round at 0 / 0 / 0. The speed targets are reported, not enforced.
 *
 *   npm run bench:peers [-- --operations 1000] [-- --skip-speed] [-- --skip-faults] [-- --no-build]
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import * as mariadb from "mariadb";
import { ChargesClient } from "@charges/client";
import { chargesOfCustomersLike } from "~/gateway-sim/inspect";
import { DIE_AFTER_GATEWAY_PREFIX } from "~/server/benchmark/dieAfterGateway";
import { slotPort } from "../scripts/lib/config";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { startApp, stopChild, type Service } from "../scripts/lib/processes";
import {
  BENCH_PORTS,
  chargeRequest,
  fmt,
  interleaved,
  interleavedRow,
  processTree,
  startBenchStack,
  table,
} from "./lib";
import {
  addCounts,
  faultChecks,
  faultCounts,
  speedChecks,
  type Check,
  type FaultCounts,
  type Operation,
} from "./peersVerdict";
import { startRedis } from "./redis";

const { values: args } = parseArgs({
  options: {
    operations: { type: "string", default: "1000" },
    "skip-speed": { type: "boolean", default: false },
    "skip-faults": { type: "boolean", default: false },
    /** Only these stacks' fault rounds (comma-separated names, as in the tables); all by default. */
    stacks: { type: "string" },
    "no-build": { type: "boolean", default: false },
  },
});
const STORM_OPERATIONS = Number(args.operations);
/** The other fault rounds: enough operations in flight at the moment of the fault to show what it does. */
const FAULT_OPERATIONS = 200;
const FAULT_DEADLINE_MS = 30_000;
/** The one more ask of an operation whose client ran out of time. */
const FOLLOW_UP_DEADLINE_MS = 20_000;
const REPLAY_KEYS = 200;
/** The gateway's timeout, and with LEASE_MARGIN_MS this layer's lease (7 s): within a fault round's deadline. */
const GATEWAY_TIMEOUT_MS = 5_000;

const redis = await startRedis(slotPort.cluster(15));
const stack = await startBenchStack({ GATEWAY_TIMEOUT_MS: String(GATEWAY_TIMEOUT_MS), LEASE_MARGIN_MS: "2000" });

type StackName = "charges" | "node-idempotency + Redis" | "node-idempotency + memory" | "no layer";
/** Each stack's own instance; the ports are the benchmark band's, none of whose other users runs beside this. */
const STACKS: Record<StackName, { port: number; env: Record<string, string> }> = {
  charges: { port: BENCH_PORTS.app, env: {} },
  "node-idempotency + Redis": {
    port: BENCH_PORTS.floor,
    env: { BENCHMARK_PEER: "node-idempotency-redis", BENCHMARK_PEER_REDIS_URL: redis.url },
  },
  "node-idempotency + memory": { port: BENCH_PORTS.protocolFloor, env: { BENCHMARK_PEER: "node-idempotency-memory" } },
  "no layer": { port: BENCH_PORTS.baseline, env: { BENCHMARK_SKIP_IDEMPOTENCY: "1" } },
};
const NAMES = Object.keys(STACKS) as StackName[];
const PEERS = ["node-idempotency + Redis", "node-idempotency + memory"] as const;

/** The running instance of each stack (replaced when a fault round restarts it). */
const running = new Map<StackName, { url: string; pid: number; service?: Service }>();
running.set("charges", { url: stack.url, pid: stack.pid });

async function start(name: StackName, extra: Record<string, string> = {}) {
  const { port, env } = STACKS[name];
  const service = await startApp({ port, env: { ...env, ...extra }, quiet: true });
  running.set(name, { url: service.url, pid: service.child.pid!, service });
}

/** SIGKILL of the instance's whole process tree (`next start` and whatever it started). */
async function kill(name: StackName) {
  const { pid, service } = running.get(name)!;
  for (const p of processTree(pid)) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  if (service) await stopChild(service.child, "SIGKILL");
  await waitUntilGone(pid, "its SIGKILL");
}

async function waitUntilGone(pid: number, what: string, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (processTree(pid).length > 0) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still runs ${timeoutMs} ms after ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Stops the instance started at the beginning (by startBenchStack) or by a round, gracefully. */
async function stopInstance(name: StackName) {
  const current = running.get(name)!;
  if (current.service) await current.service.stop();
  else await kill(name); // the stack's own: startBenchStack's stop() then finds it gone
}

try {
  for (const name of NAMES.filter((n) => n !== "charges")) await start(name);
  if (!args["skip-speed"]) await speed();
  if (!args["skip-faults"]) await faults();
} finally {
  for (const { service } of running.values()) await service?.stop();
  await stack.stop();
  await redis.stop();
}
process.exit(process.exitCode ?? 0);

/** Speed (fresh keys and replays) of every stack, and the speed half of the verdict. */
async function speed() {
  const replayRequests = async (name: StackName) => {
    const slug = name.replace(/\W+/g, "-");
    const keys = Array.from({ length: REPLAY_KEYS }, (_, i) => `replay-${slug}-${i}`);
    const { body, headers } = chargeRequest(stack.apiKey);
    for (const key of keys) {
      const res = await fetch(`${running.get(name)!.url}/api/charges`, {
        method: "POST",
        headers: { ...headers, "Idempotency-Key": key },
        body,
      });
      if (res.status !== 201) throw new Error(`${name}: making replay key ${key} answered ${res.status}`);
    }
    return [chargeRequest(stack.apiKey, { key: () => keys[Math.floor(Math.random() * keys.length)]! })];
  };
  const fresh = () => [chargeRequest(stack.apiKey, { key: () => randomUUID() })];
  const spec = (name: StackName, requests: ReturnType<typeof fresh>) => {
    const { url, pid } = running.get(name)!;
    return { url, pid, requests };
  };
  const r = await interleaved({
    "charges fresh": spec("charges", fresh()),
    "charges replay": spec("charges", await replayRequests("charges")),
    "Redis fresh": spec("node-idempotency + Redis", fresh()),
    "Redis replay": spec("node-idempotency + Redis", await replayRequests("node-idempotency + Redis")),
    "memory fresh": spec("node-idempotency + memory", fresh()),
    "memory replay": spec("node-idempotency + memory", await replayRequests("node-idempotency + memory")),
    "no layer fresh": spec("no layer", fresh()),
  });
  table(
    "POST /api/charges, 20 connections, 8 s warm-up each, then 6 slices of 3 s each, interleaved, tok_visa",
    Object.entries(r).map(([run, x]) => interleavedRow(run, x)),
  );
  const ours = { fresh: r["charges fresh"].rps, replay: r["charges replay"].rps };
  const peers = {
    "node-idempotency + Redis": { fresh: r["Redis fresh"].rps, replay: r["Redis replay"].rps },
    "node-idempotency + memory": { fresh: r["memory fresh"].rps, replay: r["memory replay"].rps },
  };
  table(
    "charges / each, req/s (and app CPU per request)",
    [...PEERS, "no layer" as const].map((peer) => {
      const short = peer === "no layer" ? "no layer" : peer.includes("Redis") ? "Redis" : "memory";
      const cpu = (run: string) => r[run as keyof typeof r].cpuMsPerRequest!;
      return {
        against: peer,
        "fresh req/s": fmt(r["charges fresh"].rps / r[`${short} fresh` as keyof typeof r].rps, 2),
        "fresh CPU / request": fmt(cpu("charges fresh") / cpu(`${short} fresh`), 2),
        "replay req/s": short === "no layer" ? "n/a" : fmt(ours.replay / r[`${short} replay` as keyof typeof r].rps, 2),
        "replay CPU / request": short === "no layer" ? "n/a" : fmt(cpu("charges replay") / cpu(`${short} replay`), 2),
      };
    }),
  );
  table("Speed targets", speedChecks(ours, peers).map(shown));
  if (Object.values(r).some((x) => x.failures > 0)) {
    console.error("bench:peers: a speed run had failures (non-2xx answers or errors)");
    process.exitCode = 1;
  }
}

function shown(c: Check) {
  return { target: c.target, value: c.value, met: c.met ? "yes" : "NO" };
}

type Round = "storm" | "SIGKILL + restart" | "Redis crash + restart" | "death after the gateway call";

/** Every fault round on every stack, one stack at a time, and the correctness half of the verdict. */
async function faults() {
  const results = new Map<StackName, Record<Round, FaultCounts>>();
  const chosen = args.stacks?.split(",") ?? NAMES;
  for (const name of NAMES.filter((n) => chosen.includes(n))) {
    const rounds = {} as Record<Round, FaultCounts>;
    rounds.storm = await round(name, "storm", { operations: STORM_OPERATIONS, card: "tok_slow_3000", rampMs: 2_000 });
    rounds["SIGKILL + restart"] = await round(name, "kill", {
      card: "tok_slow_2000",
      rampMs: 1_000,
      fault: async () => {
        await kill(name);
        await start(name);
      },
    });
    rounds["Redis crash + restart"] = await round(name, "redis", {
      card: "tok_slow_2000",
      rampMs: 1_000,
      fault: () => redis.crash(),
    });
    await stopInstance(name);
    await start(name, { BENCHMARK_DIE_AFTER_GATEWAY: "1" });
    rounds["death after the gateway call"] = await round(name, "die", {
      card: "tok_visa",
      rampMs: 0,
      customerPrefix: DIE_AFTER_GATEWAY_PREFIX,
      fault: async () => {
        await waitUntilGone(running.get(name)!.pid, "the first charge it was to die after", 20_000);
        await start(name);
      },
      atOnce: true,
    });
    results.set(name, rounds);
    console.log(`${name}: ${JSON.stringify(rounds)}`);
  }
  const cell = (c: FaultCounts) => `${c.duplicates} / ${c.unrecorded} / ${c.blocked}`;
  const roundNames = Object.keys([...results.values()][0] ?? {}) as Round[];
  table(
    "Fault rounds: duplicate gateway charges / charges the app never recorded / operations left blocked",
    [...results].map(([name, rounds]) => {
      const total = Object.values(rounds).reduce(addCounts);
      return { stack: name, ...Object.fromEntries(roundNames.map((n) => [n, cell(rounds[n])])), total: cell(total) };
    }),
  );
  if (!results.has("charges")) return;
  const checks = faultChecks(results.get("charges")!);
  table("Fault targets (this project's layer)", checks.map(shown));
  if (checks.some((c) => !c.met)) process.exitCode = 1;
}

type RoundOptions = {
  operations?: number;
  card: string;
  rampMs: number;
  /** What befalls the stack once half the operations are at the gateway (`atOnce`: as they start). */
  fault?: () => Promise<void>;
  atOnce?: boolean;
  customerPrefix?: string;
};

/**
 * One fault round on one stack: its operations through the SDK (attempt timeout 1 s, shorter than the gateway,
 * so every one of them is retried), the fault meanwhile, then what the gateway charged for them against what the
 * app recorded. An operation whose client ran out of time (while the app restarted on a loaded machine, say) is
 * asked once more, as its client would, with the same key and body and time to spare: blocked is what that
 * cannot settle either.
 */
async function round(name: StackName, label: string, opts: RoundOptions): Promise<FaultCounts> {
  const operations = opts.operations ?? FAULT_OPERATIONS;
  const prefix = `${opts.customerPrefix ?? "cus_peers_"}${label}_${randomUUID().slice(0, 8)}_`;
  const client = (attemptTimeoutMs: number, deadlineMs: number) =>
    new ChargesClient({ baseUrl: running.get(name)!.url, apiKey: stack.apiKey, attemptTimeoutMs, deadlineMs });
  const hasty = client(1_000, FAULT_DEADLINE_MS);
  const patient = client(10_000, FOLLOW_UP_DEADLINE_MS);
  const started = performance.now();
  // A fixed delay would strike a loaded machine's stack before its operations got anywhere: wait for half of
  // them to be at the gateway (charged, its answer 2 s away), at most 20 s.
  const fault = opts.fault
    ? (opts.atOnce ? Promise.resolve() : atGateway(prefix, operations / 2, 20_000)).then(() => opts.fault!())
    : Promise.resolve();
  const ops = Array.from({ length: operations }, (_, i) => ({
    customerId: `${prefix}${i}`,
    idempotencyKey: randomUUID(),
    params: { amount_cents: 500, currency: "usd", card_token: opts.card, customer_id: `${prefix}${i}` },
  }));
  /** Why clients gave up: the last problem each SDK call names ("TimeoutError", "409 request_in_progress"). */
  const gaveUp = new Map<string, number>();
  const settles = (sdk: ChargesClient, op: (typeof ops)[number]) =>
    sdk.createCharge(op.params, { idempotencyKey: op.idempotencyKey }).then(
      () => true,
      (error: Error) => {
        const why = /\(last: ([^)]*)\)/.exec(error.message)?.[1] ?? error.message.slice(0, 80);
        gaveUp.set(why, (gaveUp.get(why) ?? 0) + 1);
        return false;
      },
    );
  const first = await Promise.all(
    ops.map(async (op, i) => {
      await new Promise((r) => setTimeout(r, (i * opts.rampMs) / operations));
      return settles(hasty, op);
    }),
  );
  await fault; // a fault that failed (an app that would not restart) fails the run here
  const late = first.filter((settled) => !settled).length;
  const outcomes: Operation[] = await Promise.all(
    ops.map(async (op, i) => ({ customerId: op.customerId, settled: first[i] || (await settles(patient, op)) })),
  );
  await new Promise((r) => setTimeout(r, 1_000)); // work still running after its client's answer lands
  const counts = await countDamage(outcomes, prefix);
  const took = fmt((performance.now() - started) / 1000);
  const why = JSON.stringify(Object.fromEntries(gaveUp));
  console.log(`${name}, ${label}: ${JSON.stringify(counts)} (${late} asked again; gave up on: ${why}) in ${took} s`);
  return counts;
}

/** Resolves once the gateway has `count` charges for the round's customers, or after `timeoutMs`. */
async function atGateway(prefix: string, count: number, timeoutMs: number) {
  const gw = await mariadb.createConnection(connectionOptions(stack.gatewayDatabaseUrl, true));
  try {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && (await chargesOfCustomersLike(gw, stack.gateway, prefix)).length < count) {
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await gw.end();
  }
}

async function countDamage(operations: Operation[], prefix: string): Promise<FaultCounts> {
  const gw = await mariadb.createConnection(connectionOptions(stack.gatewayDatabaseUrl, true));
  const app = await mariadb.createConnection(connectionOptions(stack.databaseUrl, true));
  try {
    const charged = await chargesOfCustomersLike(gw, stack.gateway, prefix);
    const rows = (await app.query("SELECT gateway_charge_id FROM charges WHERE customer_id LIKE ?", [
      `${prefix}%`,
    ])) as { gateway_charge_id: string }[];
    return faultCounts(operations, charged, new Set(rows.map((r) => r.gateway_charge_id)));
  } finally {
    await gw.end();
    await app.end();
  }
}
