/** The fault run's storage stall: how many gaps it locks, how long it holds (scripts/lib/faults/stallStorage.ts). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { gapsToLock, MIN_ROWS, stallHoldMs } from "../../scripts/lib/faults/stallStorage";

test("a stall locks about its share of a table's gaps, at least one, none in a table too small", () => {
  assert.equal(gapsToLock(0), 0);
  assert.equal(gapsToLock(MIN_ROWS - 1), 0, "one gap of a tiny table is most of its inserts");
  assert.equal(gapsToLock(MIN_ROWS, 0.08), 1);
  // A random id's gap is twice the mean gap (1 / (rows + 1)): half as many gaps as the share of the mean ones.
  assert.equal(gapsToLock(99, 0.08), 4, "100 gaps between and around 99 rows, each locked one ~2 % of the ids");
  assert.equal(gapsToLock(999, 0.1), 50);
});

test("a stall holds past the write-off of an operation it held: timeout, lease margin, reap delay, two sweeps", () => {
  const timings = {
    GATEWAY_TIMEOUT_MS: "1500",
    LEASE_MARGIN_MS: "500",
    REAP_AFTER_MS: "4000",
    SWEEP_INTERVAL_MS: "1000",
  };
  assert.equal(stallHoldMs(timings, 0), 8_000);
  assert.equal(stallHoldMs(timings, 1_200), 9_200);
});
