/**
 * Idempotency overhead, four ways through the same handler and build: the
 * route with the idempotency layer switched off (a second instance with
 * BENCHMARK_SKIP_IDEMPOTENCY=1: no record, no claim, no completion), the
 * same plus the least any insert-first layer must do (a third, =floor: a
 * claim INSERT under a unique index before the gateway call and an UPDATE of
 * it in the charge's transaction, with none of this layer's work, so the most
 * keyed requests could reach on this machine), keyed POSTs (a fresh key per request) and
 * keyless POSTs (counted, recorded), interleaved in short slices
 * (bench/lib.ts `interleaved`).
 */
import { randomUUID } from "node:crypto";
import { chargeRequest, fmt, interleaved, startBenchStack, table, type Interleaved } from "./lib";

const stack = await startBenchStack({}, { baseline: true });
try {
  const keyed = () => [chargeRequest(stack.apiKey, { key: () => randomUUID() })];
  const r = await interleaved({
    off: { url: stack.baselineUrl!, requests: keyed(), pid: stack.baselinePid },
    floor: { url: stack.floorUrl!, requests: keyed(), pid: stack.floorPid },
    keyed: { url: stack.url, requests: keyed(), pid: stack.pid },
    keyless: { url: stack.url, requests: [chargeRequest(stack.apiKey)], pid: stack.pid },
  });
  const row = (run: string, x: Interleaved) => ({
    run,
    "req/s": fmt(x.rps),
    "p50 ms": x.p50,
    "p99 ms": x.p99,
    failures: x.failures,
    "app CPU ms / request": fmt(x.cpuMsPerRequest ?? 0, 2),
    "MariaDB CPU ms / request": fmt(x.databaseCpuMsPerRequest, 2),
    "req/s per slice": x.slices.map((s) => fmt(s, 0)).join(" "),
  });
  table("POST /api/charges, 20 connections, 8 s warm-up each, then 6 slices of 3 s each, interleaved, tok_visa", [
    row("idempotency layer off (benchmark-only switch)", r.off),
    row("layer off + a bare claim INSERT and its UPDATE: the protocol's floor", r.floor),
    row("keyed (fresh key per request)", r.keyed),
    row("keyless (counted, recorded)", r.keyless),
  ]);
  const ratio = (name: string, x: Interleaved, y: Interleaved, target: number | string) => ({
    ratio: name,
    "req/s": fmt(x.rps / y.rps, 2),
    target,
    "app CPU per request": fmt(x.cpuMsPerRequest! / y.cpuMsPerRequest!, 2),
    "app + MariaDB CPU per request": fmt(
      (x.cpuMsPerRequest! + x.databaseCpuMsPerRequest) / (y.cpuMsPerRequest! + y.databaseCpuMsPerRequest),
      2,
    ),
  });
  table("Ratios", [
    ratio("keyed / layer off", r.keyed, r.off, 0.9),
    ratio("floor (bare claim and completion) / layer off", r.floor, r.off, "the most keyed can reach"),
    ratio("keyed / floor", r.keyed, r.floor, ""),
    ratio("keyless / keyed", r.keyless, r.keyed, 0.95),
  ]);
  if (Object.values(r).some((x) => x.failures > 0)) process.exitCode = 1;
} finally {
  await stack.stop();
}
process.exit(process.exitCode ?? 0);
