/**
 * `npm test`'s lanes: never more at once than asked, never two on one TEST_SLOT, every lane run once; and the
 * MariaDB connection budget that decides how many run at once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { CONNECTIONS_PER_LANE, connectionsNeeded, lanesThatFit } from "../../scripts/lib/suite/connections";
import { E2E_SHARDS, LANES, NODE_SHARDS } from "../../scripts/lib/suite/lanes";
import { filesOfShard, parseShard } from "../../scripts/lib/suite/shards";
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
  assert.equal(lanesThatFit(3, 151, 5), 1, "a fresh server's 151 holds one stack");
  assert.equal(lanesThatFit(3, 151, 100), 1, "one lane even when the server looks full");
});

test("the lanes: a fault run and a node:test run per gateway, the cluster and the browser tests, unique names", () => {
  const names = LANES.map((l) => l.name);
  assert.equal(new Set(names).size, names.length);
  for (const gateway of ["sim", "stripe"] as const) {
    const faultRuns = LANES.filter((l) => l.gateway === gateway && l.args.includes("scripts/faults.ts"));
    assert.equal(faultRuns.length, 1, `one fault run through ${gateway}`);
    const shards = LANES.filter((l) => l.gateway === gateway && l.args.includes("node"));
    assert.deepEqual(
      shards.map((l) => l.args.at(-1)),
      Array.from({ length: NODE_SHARDS[gateway] }, (_, i) => `--shard=${i + 1}/${NODE_SHARDS[gateway]}`),
      `every shard of the node:test files through ${gateway}, once`,
    );
  }
  assert.ok(LANES.some((l) => l.args.includes("scripts/testCluster.ts")));
  assert.deepEqual(
    LANES.filter((l) => l.args.includes("e2e")).map((l) => l.args.at(-1)),
    Array.from({ length: E2E_SHARDS }, (_, i) => `--shard=${i + 1}/${E2E_SHARDS}`),
    "every shard of the browser specs, once",
  );
  assert.ok(
    LANES.every((l) => l.args.includes("--no-build")),
    "the lanes share the suite's one build",
  );
});

test("shards: every file in exactly one, in its given order, balanced by weight, the same cut every time", () => {
  const weights: Record<string, number> = { a: 50, b: 40, c: 30, d: 20, e: 10, f: 10 };
  const files = Object.keys(weights);
  const weight = (f: string) => weights[f]!;
  const cut = (count: number) =>
    Array.from({ length: count }, (_, i) => filesOfShard(files, { index: i + 1, count }, weight));
  for (const count of [1, 2, 3, 4, 7]) {
    const shards = cut(count);
    assert.deepEqual(shards.flat().sort(), files, `${count} shards: each file once`);
    for (const shard of shards) assert.deepEqual(shard, [...shard].sort(), "in the given order");
    assert.deepEqual(cut(count), shards, "deterministic");
  }
  // Longest first to the lightest shard: 50+20+10 | 40+30+10.
  assert.deepEqual(cut(2), [
    ["a", "d", "e"],
    ["b", "c", "f"],
  ]);
  assert.deepEqual(parseShard("--shard=2/3"), { index: 2, count: 3 });
  for (const bad of ["--shard=0/2", "--shard=3/2", "--shard=1", "--shard=a/b"])
    assert.throws(() => parseShard(bad), /--shard=<i>\/<n>/);
});
