/**
 * `npm test`'s lanes: never more at once than asked, never two on one TEST_SLOT, every lane run once; and the
 * MariaDB connection budget that decides how many run at once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CONNECTIONS_PER_LANE, connectionsNeeded, lanesThatFit } from "../../scripts/lib/suite/connections";
import { LANES } from "../../scripts/lib/suite/lanes";
import { parseSlots, runOnSlots } from "../../scripts/lib/suite/schedule";

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("at most `concurrency` lanes at once, each on a slot no running lane holds, all run once, in order", async () => {
  for (const concurrency of [1, 2, 3, 5]) {
    const running = new Set<number>();
    let most = 0;
    const lanes = Array.from({ length: 7 }, (_, i) => i);
    const results = await runOnSlots(lanes, [8, 1, 3], concurrency, async (lane, slot) => {
      assert.ok(!running.has(slot), `slot ${slot} is already in use`);
      running.add(slot);
      most = Math.max(most, running.size);
      await tick(1 + ((lane * 7) % 5));
      running.delete(slot);
      return `${lane}@${slot}`;
    });
    assert.equal(most, Math.min(concurrency, 3));
    assert.deepEqual(
      results.map((r) => Number(r.split("@")[0])),
      lanes,
    );
  }
});

test("a failing lane gives its slot back and the others still run", async () => {
  const ran: number[] = [];
  const results = await runOnSlots([0, 1, 2, 3], [1], 3, async (lane) => {
    ran.push(lane);
    return lane !== 1;
  });
  assert.deepEqual(ran, [0, 1, 2, 3]);
  assert.deepEqual(results, [true, false, true, true]);
});

test("TEST_LANE_SLOTS: distinct slots 0-9", () => {
  assert.deepEqual(parseSlots("8,1,3"), [8, 1, 3]);
  assert.deepEqual(parseSlots(" 1, 2 "), [1, 2]);
  for (const bad of ["", "1,1", "10", "a", "1,,2"]) assert.throws(() => parseSlots(bad), /TEST_LANE_SLOTS/);
});

test("the connection budget: room for the lanes beside what is open, or fewer lanes (never none)", () => {
  assert.equal(connectionsNeeded(3, 10), 10 + 20 + 3 * CONNECTIONS_PER_LANE);
  assert.equal(lanesThatFit(3, 600, 100), 3);
  assert.equal(lanesThatFit(3, 151, 5), 2, "a fresh server's 151 holds two stacks");
  assert.equal(lanesThatFit(3, 151, 100), 1, "one lane even when the server looks full");
});

test("the lanes: a fault run and a node:test run per gateway, the cluster and the browser tests, unique names", () => {
  const names = LANES.map((l) => l.name);
  assert.equal(new Set(names).size, names.length);
  for (const gateway of ["sim", "stripe"] as const) {
    const faultRuns = LANES.filter((l) => l.gateway === gateway && l.args.includes("scripts/faults.ts"));
    assert.equal(faultRuns.length, 1, `one fault run through ${gateway}`);
    assert.ok(LANES.some((l) => l.gateway === gateway && l.args.at(-1) === "node"));
  }
  assert.ok(LANES.some((l) => l.args.includes("scripts/testCluster.ts")));
  assert.ok(LANES.some((l) => l.args.at(-1) === "e2e"));
  assert.ok(
    LANES.every((l) => l.args.includes("--no-build")),
    "the lanes share the suite's one build",
  );
});
