import assert from "node:assert/strict";
import { test } from "node:test";
import { automaticGranularity } from "~/server/rollout/granularity";

test("left to choose, the rollout chart is per minute in the first three hours of counts, then hourly", () => {
  const now = new Date("2026-12-06T12:00:00Z");
  const ago = (h: number) => new Date(now.getTime() - h * 3_600_000);
  assert.equal(automaticGranularity(null, now), "minute", "nothing counted yet");
  assert.equal(automaticGranularity(ago(0.5), now), "minute");
  assert.equal(automaticGranularity(ago(2.99), now), "minute");
  assert.equal(automaticGranularity(ago(3), now), "hour");
  assert.equal(automaticGranularity(ago(72), now), "hour");
});
