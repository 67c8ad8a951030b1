/** Idempotency overhead: keyed POST vs keyless POST through the same handler. */
import { randomUUID } from "node:crypto";
import { chargeRequest, fmt, load, startBenchStack, table } from "./lib";

const stack = await startBenchStack();
try {
  const warm = await load({ url: stack.url, duration: 3, requests: [chargeRequest(stack.apiKey)] });
  void warm;
  const keyless = await load({ url: stack.url, requests: [chargeRequest(stack.apiKey)] });
  const keyed = await load({ url: stack.url, requests: [chargeRequest(stack.apiKey, { key: () => randomUUID() })] });
  table("Keyed vs keyless POST /api/charges (20 connections, 8 s each, tok_visa)", [
    { run: "keyless (baseline)", "req/s": fmt(keyless.rps), "p50 ms": keyless.p50, "p99 ms": keyless.p99, non2xx: keyless.non2xx },
    { run: "keyed", "req/s": fmt(keyed.rps), "p50 ms": keyed.p50, "p99 ms": keyed.p99, non2xx: keyed.non2xx },
    { run: "keyed / keyless", "req/s": fmt(keyed.rps / keyless.rps, 2), "p50 ms": fmt(keyed.p50 / keyless.p50, 2), "p99 ms": fmt(keyed.p99 / keyless.p99, 2), non2xx: "" },
  ]);
} finally {
  await stack.stop();
}
process.exit(0);
