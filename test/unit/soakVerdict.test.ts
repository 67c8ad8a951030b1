/**
 * The soak benchmark's verdict on growth (bench/trend.ts): a least-squares line over every sample, its slope's
 * 95 % interval, and a failure only for significant growth beyond the limit.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { judgeGrowth, leastSquares, t975, type Point } from "../../bench/trend";

const near = (actual: number, expected: number, tolerance = 1e-3) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} is not within ${tolerance} of ${expected}`);
const series = (values: number[], from = 5, step = 0.5): Point[] =>
  values.map((value, i) => ({ minute: from + i * step, value }));

test("Student's t at 95 %: the table, and close to the normal's 1.96 for many samples", () => {
  near(t975(1), 12.706);
  near(t975(8), 2.306);
  near(t975(30), 2.042);
  near(t975(40), 2.021, 2e-3);
  near(t975(10_000), 1.96, 1e-3);
  assert.throws(() => t975(0));
});

test("the line and its slope's interval match a worked example", () => {
  // y = 2.2 + 0.6 x; residual sum of squares 2.4 over 3 degrees of freedom; Sxx 10; t(3) 3.182.
  const line = leastSquares(series([2, 4, 5, 4, 5], 1, 1))!;
  near(line.slopePerMinute, 0.6);
  const halfWidth = 3.182 * Math.sqrt(2.4 / 3 / 10);
  near(line.slopeInterval[0], 0.6 - halfWidth);
  near(line.slopeInterval[1], 0.6 + halfWidth);
  assert.equal(leastSquares(series([1, 2])), null, "two samples leave no degree of freedom");
  assert.equal(leastSquares([1, 2, 3].map((value) => ({ minute: 5, value }))), null, "one minute has no slope");
});

test("steady doubling with noise: significant, beyond 1.5x, fails", () => {
  const noise = [0.9, -1.1, 0.4, 1.2, -0.7, -0.3, 1.0, -0.9, 0.2, -0.5, 0.8];
  const points = series(noise.map((e, i) => 20 + 2 * i + e));
  const verdict = judgeGrowth(points, 1.5);
  assert.ok(verdict.significant);
  assert.ok(verdict.growth > 1.8 && verdict.growth < 2.2, verdict.text);
  assert.ok(verdict.growthInterval[0] < verdict.growth && verdict.growth < verdict.growthInterval[1]);
  assert.equal(verdict.fails, true, verdict.text);
});

test("significant growth within the limit passes", () => {
  const verdict = judgeGrowth(series([20, 20.4, 21, 21.3, 22, 22.2, 23, 23.1, 24, 24.4, 25]), 1.5);
  assert.ok(verdict.significant, verdict.text);
  assert.equal(verdict.fails, false, verdict.text);
});

test("issue 31's false alarm: noisy windows whose last medians doubled while the trend fell, passes", () => {
  // The first three windows low, the last three high, and the windows between them higher still: the medians of
  // three at each end say 2x, every sample together says no growth.
  const p99 = [21.8, 60.9, 22.4, 140, 120, 100, 80, 60, 44.1, 43.7, 45.0];
  const verdict = judgeGrowth(series(p99), 1.5);
  assert.ok(verdict.line!.slopePerMinute < 0, verdict.text);
  assert.equal(verdict.significant, false);
  assert.equal(verdict.fails, false, verdict.text);
});

test("one wild window at the end does not make growth significant", () => {
  const verdict = judgeGrowth(series([22, 21, 23, 22, 21, 22, 23, 21, 22, 22, 95]), 1.5);
  assert.equal(verdict.significant, false, verdict.text);
  assert.equal(verdict.fails, false);
});

test("too few samples: no verdict, no failure", () => {
  const verdict = judgeGrowth(series([10, 40]), 1.5);
  assert.equal(verdict.fails, false);
  assert.match(verdict.text, /too few samples/);
});

test("a wide interval on few samples: the growth's bounds stay at 0 or more", () => {
  const verdict = judgeGrowth(series([900, 1400, 700], 1, 0.5), 1.5);
  assert.ok(verdict.growthInterval[0] >= 0, verdict.text);
  assert.equal(verdict.fails, false);
});
