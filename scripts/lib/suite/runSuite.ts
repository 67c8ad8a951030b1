/**
 * `npm test` without arguments: the whole suite, as CI runs it. The checks that need no services (typecheck,
 * lint, unit tier) and one production build side by side; then the lanes (lanes.ts), at most TEST_LANES at once
 * (default 6; fewer if the MariaDB server has no room for them) on the slots of TEST_LANE_SLOTS (default
 * "1,2,3,4,5,6"). Every step's output goes to .data/test-lanes/<step>.log; the terminal gets a line per step, the
 * log's tail of whatever failed, the lines that say what failed and one summary line. Exit code 1 on any failure.
 */
import { bundle } from "../bundles";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { adminDatabaseUrl, root } from "../config";
import { ensureServer } from "../mariadbServer";
import { BUNDLE_FLAGS, bin } from "../processes";
import { makeRoomForLanes } from "./connections";
import { failureDigest } from "./failureDigest";
import { LANES } from "./lanes";
import { parseSlots, runOnSlots } from "./schedule";

const LOGS = path.join(root, ".data/test-lanes");
const TAIL_LINES = 80;

type Step = { name: string; ok: boolean; ms: number; cpuMs: number; log: string; slot?: number };

/**
 * CPU time of this process's reaped children (/proc/self/stat cutime + cstime, in 1/100 s): a step's whole process
 * tree is added when its process exits, so the growth at that moment is the step's cost, whatever else the
 * machine runs (NaN where there is no /proc).
 */
function childrenCpuMs(): number {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return Number.NaN;
  }
}
let cpuCounted = childrenCpuMs();

const seconds = (ms: number) =>
  `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, "0")}s`;

/** Runs one command with its output in its own log file; never rejects. */
function runLogged(name: string, command: string, args: string[], env: Record<string, string> = {}, slot?: number) {
  const log = path.join(LOGS, `${name}.log`);
  const started = Date.now();
  const fd = openSync(log, "w");
  return new Promise<Step>((resolve) => {
    const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", fd, fd] });
    let finished = false;
    const done = (ok: boolean) => {
      if (finished) return; // a spawn error may be followed by an exit
      finished = true;
      closeSync(fd);
      const cpuNow = childrenCpuMs();
      const step = { name, ok, ms: Date.now() - started, cpuMs: cpuNow - cpuCounted, log, slot };
      cpuCounted = cpuNow;
      const where = slot === undefined ? "" : ` (slot ${slot})`;
      console.log(
        `${ok ? "ok    " : "FAILED"} ${name.padEnd(13)} ${seconds(step.ms)}, CPU ${seconds(step.cpuMs)}${where}`,
      );
      resolve(step);
    };
    child.once("error", () => done(false));
    child.once("exit", (code) => done(code === 0));
  });
}

const unitFiles = () =>
  readdirSync(path.join(root, "test/unit"))
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `test/unit/${f}`);

function tail(file: string): string {
  const lines = readFileSync(file, "utf8").trimEnd().split("\n");
  return lines.slice(-TAIL_LINES).join("\n");
}

/** The 1-minute load average, sampled through the run: on a shared machine, timings mean little without it. */
function sampleLoad() {
  const samples: number[] = [loadavg()[0]!];
  const timer = setInterval(() => samples.push(loadavg()[0]!), 15_000);
  return {
    stop() {
      clearInterval(timer);
      samples.push(loadavg()[0]!);
      const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
      return `load ${mean.toFixed(1)} mean, ${Math.max(...samples).toFixed(1)} max`;
    },
  };
}

function finish(steps: Step[], startedAt: number, load: string): number {
  const failed = steps.filter((s) => !s.ok);
  for (const step of failed) {
    console.log(`\n---- ${step.name} FAILED; the last ${TAIL_LINES} lines of ${path.relative(root, step.log)}:`);
    console.log(tail(step.log));
  }
  const digest = failed.flatMap((s) => failureDigest(readFileSync(s.log, "utf8")).map((l) => `  ${s.name}: ${l}`));
  if (failed.length > 0) console.log(`\nwhat failed:\n${digest.join("\n")}`);
  const parts = steps.map((s) => `${s.name} ${s.ok ? "ok" : "FAILED"} ${seconds(s.ms)}`).join(", ");
  const cpu = seconds(steps.reduce((n, s) => n + s.cpuMs, 0));
  const verdict = failed.length === 0 ? "PASSED" : "FAILED";
  console.log(`\n${verdict} in ${seconds(Date.now() - startedAt)} (CPU ${cpu}; ${load}): ${parts}`);
  return failed.length === 0 ? 0 : 1;
}

/** TEST_ONLY_LANES ("e2e,cluster"): only these lanes, e.g. to run a failed one again; unset: all of them. */
function chosenLanes() {
  const only = process.env.TEST_ONLY_LANES?.split(",").map((s) => s.trim());
  if (!only) return LANES;
  const unknown = only.filter((name) => !LANES.some((l) => l.name === name));
  if (unknown.length > 0)
    throw new Error(`TEST_ONLY_LANES: no lane ${unknown.join(", ")} (${LANES.map((l) => l.name)})`);
  return LANES.filter((l) => only.includes(l.name));
}

export async function runSuite({ build }: { build: boolean }): Promise<number> {
  const startedAt = Date.now();
  const load = sampleLoad();
  rmSync(LOGS, { recursive: true, force: true });
  mkdirSync(LOGS, { recursive: true });
  const slots = parseSlots(process.env.TEST_LANE_SLOTS ?? "1,2,3,4,5,6");
  const wanted = Number(process.env.TEST_LANES ?? 6);
  if (!Number.isInteger(wanted) || wanted < 1) throw new Error("TEST_LANES must be a whole number, 1 or more");
  if (process.env.GATEWAY) console.log(`GATEWAY=${process.env.GATEWAY} is ignored: the suite runs both gateways`);
  console.log(`step logs: ${path.relative(root, LOGS)}/`);

  // The build beside the checks (under load it waited half a minute for them); the typecheck step checks what
  // `next build` would check again. The build deletes and rewrites .next/, whose route types tsconfig.json includes:
  // removed first, tsc cannot list a file the build then deletes (a clean clone has none either).
  if (build) rmSync(path.join(root, ".next/types"), { recursive: true, force: true });
  const buildEnv = {
    NODE_ENV: "production",
    SESSION_SECRET: randomBytes(32).toString("hex"),
    CHARGES_TYPECHECKED: "1",
  };
  const steps = await Promise.all([
    runLogged("typecheck", bin("tsc"), ["--noEmit"]),
    runLogged("lint", bin("biome"), ["check", "--error-on-warnings", "."]),
    // The spec reporter (a file gets TAP otherwise): an assertion's message on the line of its error.
    bundle(unitFiles(), path.join(root, ".data/bundles/unit")).then((files) =>
      runLogged("unit", process.execPath, [...BUNDLE_FLAGS, "--test", "--test-reporter=spec", ...files]),
    ),
    ...(build ? [runLogged("build", bin("next"), ["build"], buildEnv)] : []),
  ]);
  if (steps.some((s) => !s.ok)) return finish(steps, startedAt, load.stop());

  // No server answering: one private instance for every lane (each lane starting its own would collide on the port).
  const privateDb = await ensureServer(adminDatabaseUrl(), path.join(root, ".data/mariadb"));
  try {
    const room = await makeRoomForLanes(adminDatabaseUrl(), Math.min(wanted, slots.length));
    console.log(`lanes: ${chosenLanes().length}, ${room.lanes} at once on slots ${slots.join(",")} (${room.note})`);
    const lanes = await runOnSlots(chosenLanes(), slots, room.lanes, (lane, slot) => {
      console.log(`start  ${lane.name.padEnd(13)} (slot ${slot})`);
      // A node lane also writes each test file's wall time (fileTimesReporter.mjs), to balance its shards by.
      const times = path.join(LOGS, `${lane.name}.times.jsonl`);
      const env = { TEST_SLOT: String(slot), GATEWAY: lane.gateway, TEST_TIMES_FILE: times };
      return runLogged(lane.name, bin("tsx"), lane.args, env, slot);
    });
    return finish([...steps, ...lanes], startedAt, load.stop());
  } finally {
    await privateDb?.stop();
  }
}
