/**
 * Idempotency overhead, three ways through the same handler and build:
 * the route with the idempotency layer switched off (a second instance with
 * BENCHMARK_SKIP_IDEMPOTENCY=1: no record, no claim, no completion), keyed
 * POSTs (a fresh key per request) and keyless POSTs (counted, recorded). Two
 * rounds in alternating order, so that drift on a shared machine hits all
 * three alike; the ratios are of the rounds' sums.
 */
import { randomUUID } from "node:crypto";
import { chargeRequest, fmt, load, startBenchStack, table, type Load } from "./lib";

const ROUNDS = 2;
const stack = await startBenchStack({}, { baseline: true });
try {
  const runs = {
    off: { url: stack.baselineUrl!, requests: () => [chargeRequest(stack.apiKey, { key: () => randomUUID() })] },
    keyed: { url: stack.url, requests: () => [chargeRequest(stack.apiKey, { key: () => randomUUID() })] },
    keyless: { url: stack.url, requests: () => [chargeRequest(stack.apiKey)] },
  };
  type Run = keyof typeof runs;
  for (const name of Object.keys(runs) as Run[]) {
    await load({ url: runs[name].url, duration: 3, requests: runs[name].requests() });
  }
  const results: Record<Run, Load[]> = { off: [], keyed: [], keyless: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = (Object.keys(runs) as Run[]).slice();
    if (round % 2 === 1) order.reverse();
    for (const name of order) results[name].push(await load({ url: runs[name].url, requests: runs[name].requests() }));
  }
  const sum = (name: Run, f: (l: Load) => number) => results[name].reduce((n, l) => n + f(l), 0);
  const ratio = (a: Run, b: Run, f: (l: Load) => number) => fmt(sum(a, f) / sum(b, f), 2);
  const row = (label: string, name: Run) => ({
    run: label,
    "req/s (per round)": results[name].map((l) => fmt(l.rps)).join(" / "),
    "p50 ms": results[name].map((l) => l.p50).join(" / "),
    "p99 ms": results[name].map((l) => l.p99).join(" / "),
    non2xx: sum(name, (l) => l.non2xx + l.errors),
  });
  table(`POST /api/charges, 20 connections, 8 s per run, ${ROUNDS} rounds in alternating order, tok_visa`, [
    row("idempotency layer off (benchmark-only switch)", "off"),
    row("keyed (fresh key per request)", "keyed"),
    row("keyless (counted, recorded)", "keyless"),
  ]);
  const rps = (l: Load) => l.rps;
  const p50 = (l: Load) => l.p50;
  const ratios = (label: string, a: Run, b: Run, target: string) =>
    ({ ratio: label, "req/s": ratio(a, b, rps), "p50 ms": ratio(a, b, p50), target });
  table("Ratios (sums over the rounds)", [
    ratios("keyed / layer off", "keyed", "off", ">= 0.9"),
    ratios("keyless / keyed", "keyless", "keyed", ">= 0.95"),
  ]);
  if ((Object.keys(runs) as Run[]).some((name) => sum(name, (l) => l.non2xx + l.errors) > 0)) process.exitCode = 1;
} finally {
  await stack.stop();
}
process.exit(process.exitCode ?? 0);
