/**
 * Idempotency overhead, three ways through the same handler and build: the
 * route with the idempotency layer switched off (a second instance with
 * BENCHMARK_SKIP_IDEMPOTENCY=1: no record, no claim, no completion), keyed
 * POSTs (a fresh key per request) and keyless POSTs (counted, recorded),
 * interleaved in short slices (bench/lib.ts `interleaved`).
 */
import { randomUUID } from "node:crypto";
import { chargeRequest, fmt, interleaved, startBenchStack, table, type Interleaved } from "./lib";

const stack = await startBenchStack({}, { baseline: true });
try {
  const keyed = () => [chargeRequest(stack.apiKey, { key: () => randomUUID() })];
  const r = await interleaved({
    off: { url: stack.baselineUrl!, requests: keyed(), pid: stack.baselinePid },
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
    "req/s per slice": x.slices.map((s) => fmt(s, 0)).join(" "),
  });
  table("POST /api/charges, 20 connections, 6 slices of 3 s each, interleaved, tok_visa", [
    row("idempotency layer off (benchmark-only switch)", r.off),
    row("keyed (fresh key per request)", r.keyed),
    row("keyless (counted, recorded)", r.keyless),
  ]);
  table("Ratios", [
    {
      ratio: "keyed / layer off",
      "req/s": fmt(r.keyed.rps / r.off.rps, 2),
      target: 0.9,
      "app CPU per request": fmt(r.keyed.cpuMsPerRequest! / r.off.cpuMsPerRequest!, 2),
    },
    {
      ratio: "keyless / keyed",
      "req/s": fmt(r.keyless.rps / r.keyed.rps, 2),
      target: 0.95,
      "app CPU per request": fmt(r.keyless.cpuMsPerRequest! / r.keyed.cpuMsPerRequest!, 2),
    },
  ]);
  if (r.off.failures + r.keyed.failures + r.keyless.failures > 0) process.exitCode = 1;
} finally {
  await stack.stop();
}
process.exit(process.exitCode ?? 0);
