/** What the suite prints last about a failed step (scripts/lib/suite/failureDigest.ts), on the logs' real shapes. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { failureDigest } from "../../scripts/lib/suite/failureDigest";

test("a Playwright failure: the failed test and its error", () => {
  const log = [
    "  ✓   1 e2e/a.spec.ts:5:1 › passes (1.0s)",
    "  ✘   2 e2e/a.spec.ts:9:1 › fails (15.2s)",
    "  1) e2e/a.spec.ts:9:1 › fails ───",
    "    Error: expect(locator).toBeVisible() failed",
    '{"level":30,"msg":"Error: not at the start of a line"}',
  ].join("\n");
  assert.deepEqual(failureDigest(log), [
    "✘   2 e2e/a.spec.ts:9:1 › fails (15.2s)",
    "1) e2e/a.spec.ts:9:1 › fails ───",
    "Error: expect(locator).toBeVisible() failed",
  ]);
});

test("node:test's spec reporter: the failed test and its assertion, each once", () => {
  const log = [
    "✖ refunds are capped (120ms)",
    "  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
    "✖ failing tests:",
    "✖ refunds are capped (120ms)",
    "  TypeError: cannot read properties of undefined",
  ].join("\n");
  assert.deepEqual(failureDigest(log), [
    "✖ refunds are capped (120ms)",
    "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
    "✖ failing tests:",
    "TypeError: cannot read properties of undefined",
  ]);
});

test("a fault run: its seed, and the first violations after their count", () => {
  const log = [
    "fault run: seed 42 (replay with --seed 42), 600 operations over 100 s, 31 faults",
    "violations: 5",
    ...[1, 2, 3, 4, 5].map((i) => `  POST /api/charges record ${i}: final 50000 ms after its first attempt`),
  ].join("\n");
  const digest = failureDigest(log);
  assert.equal(digest.length, 5);
  assert.match(digest[0]!, /^fault run: seed 42/);
  assert.equal(digest[4], "POST /api/charges record 3: final 50000 ms after its first attempt");
  assert.deepEqual(failureDigest("violations: 0\nall tests passed"), ["violations: 0", "all tests passed"]);
});

test("tsc's and Biome's findings; otherwise the log's last lines; never more than 8", () => {
  const noise = "\n\n  more\n  and more\n  and the end";
  assert.deepEqual(failureDigest(`src/a.ts(3,7): error TS2322: Type 'number' is not assignable${noise}`), [
    "src/a.ts(3,7): error TS2322: Type 'number' is not assignable",
  ]);
  assert.deepEqual(failureDigest(`src/a.ts:3:7 lint/style/useConst  FIXABLE  ━━━━\n  × Use const.${noise}`), [
    "src/a.ts:3:7 lint/style/useConst  FIXABLE  ━━━━",
  ]);
  assert.deepEqual(failureDigest("one\ntwo\nthree\nfour\n"), ["two", "three", "four"]);
  const many = Array.from({ length: 20 }, (_, i) => `✘ ${i} e2e/a.spec.ts:${i}:1 › test ${i}`).join("\n");
  assert.equal(failureDigest(many).length, 8);
});
