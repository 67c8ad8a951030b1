/**
 * The soak benchmark's verdict on growth (heap after GC, answer p99): a least-squares line through every sample of
 * the judged minutes, its slope's 95 % interval (Student's t), and the growth it implies over those minutes.
 * Comparing the medians of a few windows at each end let three noisy windows decide (a 2.0x "growth" while the
 * trend over the same minutes fell); the line uses every sample, and the interval says whether the samples show
 * growth at all. Pure functions, unit-tested (test/unit/soakVerdict.test.ts).
 */

export type Point = { minute: number; value: number };

/** Student's t at 97.5 % (two-sided 95 %) for 1-30 degrees of freedom. */
const T_975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11,
  2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];
const Z_975 = 1.959964;

/** The two-sided 95 % quantile of Student's t: the table to 30 degrees of freedom, Cornish-Fisher beyond. */
export function t975(df: number): number {
  if (!Number.isInteger(df) || df < 1) throw new Error(`degrees of freedom must be a whole number >= 1 (got ${df})`);
  if (df <= T_975.length) return T_975[df - 1]!;
  const z = Z_975;
  return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2);
}

export type Line = {
  n: number;
  /** The mean of the minutes and of the values: the line goes through this point. */
  meanMinute: number;
  meanValue: number;
  slopePerMinute: number;
  /** The slope's 95 % interval, per minute; a single point when the samples lie on the line. */
  slopeInterval: [number, number];
  firstMinute: number;
  lastMinute: number;
};

/** The least-squares line and its slope's 95 % interval; null with fewer than three samples or a single minute. */
export function leastSquares(points: readonly Point[]): Line | null {
  const n = points.length;
  if (n < 3) return null;
  const meanMinute = points.reduce((s, p) => s + p.minute, 0) / n;
  const meanValue = points.reduce((s, p) => s + p.value, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.minute - meanMinute) ** 2, 0);
  if (sxx === 0) return null;
  const sxy = points.reduce((s, p) => s + (p.minute - meanMinute) * (p.value - meanValue), 0);
  const slope = sxy / sxx;
  const sse = points.reduce((s, p) => s + (p.value - meanValue - slope * (p.minute - meanMinute)) ** 2, 0);
  const halfWidth = t975(n - 2) * Math.sqrt(sse / (n - 2) / sxx);
  const minutes = points.map((p) => p.minute);
  return {
    n,
    meanMinute,
    meanValue,
    slopePerMinute: slope,
    slopeInterval: [slope - halfWidth, slope + halfWidth],
    firstMinute: Math.min(...minutes),
    lastMinute: Math.max(...minutes),
  };
}

/**
 * The growth over the judged minutes that a slope implies: the line's value at the last minute over its value at
 * the first, the line turning about the samples' mean. Infinite when the line starts at or below zero and rises;
 * 0 when it ends below zero.
 */
export function growthAt(line: Line, slopePerMinute: number): number {
  const at = (minute: number) => line.meanValue + slopePerMinute * (minute - line.meanMinute);
  const start = at(line.firstMinute);
  const end = at(line.lastMinute);
  if (start <= 0) return end > start ? Number.POSITIVE_INFINITY : 1;
  return Math.max(0, end / start); // a line that falls below zero has fallen to nothing, not to a negative size
}

export type GrowthVerdict = {
  line: Line | null;
  /** end / start of the fitted line, and its 95 % interval (from the slope's). */
  growth: number;
  growthInterval: [number, number];
  /** The slope's 95 % interval lies wholly above zero: the samples show growth, not noise. */
  significant: boolean;
  /** Significant growth, and more than the limit. */
  fails: boolean;
  text: string;
};

const x = (ratio: number) => (Number.isFinite(ratio) ? `${ratio.toFixed(3)}x` : "unbounded");

/**
 * Fails when the samples show growth (the slope's 95 % interval above zero) and the fitted growth over the judged
 * minutes is more than `limit` (1.5: half as much again). Too few samples to fit a line: no verdict, no failure.
 */
export function judgeGrowth(points: readonly Point[], limit: number): GrowthVerdict {
  const line = leastSquares(points);
  if (!line) {
    const text = `too few samples to judge (${points.length}; at least 3 at two or more minutes)`;
    return { line, growth: 1, growthInterval: [1, 1], significant: false, fails: false, text };
  }
  const growth = growthAt(line, line.slopePerMinute);
  const growthInterval: [number, number] = [
    growthAt(line, line.slopeInterval[0]),
    growthAt(line, line.slopeInterval[1]),
  ];
  const significant = line.slopeInterval[0] > 0;
  const fails = significant && growth > limit;
  const span = `min ${line.firstMinute.toFixed(1)}-${line.lastMinute.toFixed(1)}, ${line.n} samples`;
  const text =
    `grew ${x(growth)} (95 %: ${x(growthInterval[0])} to ${x(growthInterval[1])}; ${span}), ` +
    `${significant ? "significant" : "not significant"}, limit ${limit}x`;
  return { line, growth, growthInterval, significant, fails, text };
}
