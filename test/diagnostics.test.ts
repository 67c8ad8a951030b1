/**
 * GET /api/diagnostics (the soak benchmark's forced GC and memory figures) is
 * off unless BENCHMARK_DIAGNOSTICS=1, which the suite's server, like a
 * production one, does not set: 404 in the API's error format, and no figure.
 * (That the switch is refused outside a benchmark database: test/unit/benchmarkSwitches.test.ts.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";

const APP_URL = process.env.TEST_APP_URL ?? "http://127.0.0.1:3100";

test("GET /api/diagnostics answers 404 when BENCHMARK_DIAGNOSTICS is not set", async () => {
  assert.equal(process.env.BENCHMARK_DIAGNOSTICS, undefined, "the suite's server runs without the switch");
  const res = await fetch(`${APP_URL}/api/diagnostics`);
  const text = await res.text();
  assert.equal(res.status, 404, text);
  assert.equal(JSON.parse(text).error.code, "not_found");
  assert.doesNotMatch(text, /heapUsed|rss|eventLoop/);
});
