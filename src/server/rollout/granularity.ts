/** The rollout chart's buckets: how fine, and how far back each goes. Pure, for the unit tier. */
export type Granularity = "minute" | "hour" | "day";

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** How far back the chart goes at each granularity. */
export const SERIES_SPAN = { minute: 2 * HOUR, hour: 48 * HOUR, day: 30 * DAY } as const;

/** A history younger than this is shown per minute when the chart is left to choose. */
const FIRST_HOURS_MS = 3 * HOUR;

/** Left to choose: per minute while the history is a few hours old (per hour it would be a dot or two), else hourly. */
export function automaticGranularity(firstCounted: Date | null, now: Date): Granularity {
  return firstCounted === null || now.getTime() - firstCounted.getTime() < FIRST_HOURS_MS ? "minute" : "hour";
}
