/**
 * Idempotency overhead, four ways through the same handler and build: the
 * route with the idempotency layer switched off (a second instance with
 * BENCHMARK_SKIP_IDEMPOTENCY=1: no record, no claim, no completion), the
 * same plus the least any insert-first layer must do (a third, =floor: a
 * claim INSERT under a unique index before the gateway call and an UPDATE of
 * it in the charge's transaction, with none of this layer's work, so the most
 * keyed requests could reach on this machine), keyed POSTs (a fresh key per request) and
 * keyless POSTs (counted, recorded), and keyed refunds (POST /api/refunds, a
 * fresh key per request: the second route on the same layer, with its hold
 * under the charge's row lock), interleaved in short slices (bench/lib.ts
 * `interleaved`).
 */
import { randomUUID } from "node:crypto";
import type autocannon from "autocannon";
import { chargeRequest, fmt, interleaved, interleavedRow, startBenchStack, table, type Interleaved } from "./lib";

/**
 * Charges to refund a cent at a time, taken in turn: 20 connections then rarely wait for the same charge's row
 * lock, as refunds of a real client's many charges would not. Made through the API before the runs start.
 */
async function refundableCharges(url: string, apiKey: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 20) {
    const made = await Promise.all(
      Array.from({ length: Math.min(20, count - i) }, async () => {
        const res = await fetch(new URL("/api/charges", url), {
          method: "POST",
          headers: {
            Authorization: `Bearer ${apiKey}`,
            "Content-Type": "application/json",
            "Idempotency-Key": randomUUID(),
          },
          body: JSON.stringify({ amount_cents: 99_999_999, currency: "usd", card_token: "tok_visa" }),
        });
        if (res.status !== 201) throw new Error(`a charge to refund: ${res.status} ${await res.text()}`);
        return ((await res.json()) as { id: string }).id;
      }),
    );
    ids.push(...made);
  }
  return ids;
}

/** A keyed refund of one cent per request (a fresh key each), of the charges in turn. */
function refundRequest(apiKey: string, charges: string[]) {
  let next = 0;
  return {
    method: "POST" as const,
    path: "/api/refunds",
    headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    setupRequest: (req: autocannon.Request) => ({
      ...req,
      headers: { ...req.headers, "Idempotency-Key": randomUUID() },
      body: JSON.stringify({ charge: charges[next++ % charges.length], amount_cents: 1 }),
    }),
  };
}

const stack = await startBenchStack({}, { baseline: true });
try {
  const keyed = () => [chargeRequest(stack.apiKey, { key: () => randomUUID() })];
  const toRefund = await refundableCharges(stack.url, stack.apiKey, 200);
  const r = await interleaved({
    off: { url: stack.baselineUrl!, requests: keyed(), pid: stack.baselinePid },
    floor: { url: stack.floorUrl!, requests: keyed(), pid: stack.floorPid },
    keyed: { url: stack.url, requests: keyed(), pid: stack.pid },
    keyless: { url: stack.url, requests: [chargeRequest(stack.apiKey)], pid: stack.pid },
    refund: { url: stack.url, requests: [refundRequest(stack.apiKey, toRefund)], pid: stack.pid },
  });
  table("POST /api/charges, 20 connections, 8 s warm-up each, then 6 slices of 3 s each, interleaved, tok_visa", [
    interleavedRow("idempotency layer off (benchmark-only switch)", r.off),
    interleavedRow("layer off + a bare claim INSERT and its UPDATE: the protocol's floor", r.floor),
    interleavedRow("keyed (fresh key per request)", r.keyed),
    interleavedRow("keyless (counted, recorded)", r.keyless),
  ]);
  table("POST /api/refunds in the same rounds: 1 cent of one of 200 charges in turn, tok_visa", [
    interleavedRow("keyed refund (fresh key per request)", r.refund),
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
    ratio("keyed refund / keyed charge", r.refund, r.keyed, 0.9),
  ]);
  if (Object.values(r).some((x) => x.failures > 0)) process.exitCode = 1;
} finally {
  await stack.stop();
}
process.exit(process.exitCode ?? 0);
