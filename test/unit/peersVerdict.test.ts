/** bench/peers.ts's counting of a fault round's damage, and its verdict on the targets. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { addCounts, faultChecks, faultCounts, speedChecks } from "../../bench/peersVerdict";

test("a charge per operation, each recorded, every client answered: nothing to count", () => {
  const ops = [
    { customerId: "a", settled: true },
    { customerId: "b", settled: true },
  ];
  const charges = [
    { id: "ch1", customerId: "a" },
    { id: "ch2", customerId: "b" },
  ];
  assert.deepEqual(faultCounts(ops, charges, new Set(["ch1", "ch2"])), { duplicates: 0, unrecorded: 0, blocked: 0 });
});

test("charges beyond an operation's first are duplicates; unrecorded and unsettled are counted apart", () => {
  const ops = [
    { customerId: "a", settled: true },
    { customerId: "b", settled: false },
    { customerId: "c", settled: false },
  ];
  const charges = [
    { id: "ch1", customerId: "a" },
    { id: "ch2", customerId: "a" },
    { id: "ch3", customerId: "a" },
    { id: "ch4", customerId: "b" },
  ];
  // a: charged three times, all recorded; b: charged once, never recorded, its client gave up; c: never charged.
  assert.deepEqual(faultCounts(ops, charges, new Set(["ch1", "ch2", "ch3"])), {
    duplicates: 2,
    unrecorded: 1,
    blocked: 2,
  });
});

test("a charge for a customer of no operation of the round is not a duplicate of one", () => {
  const counts = faultCounts([{ customerId: "a", settled: true }], [{ id: "x", customerId: "other" }], new Set(["x"]));
  assert.deepEqual(counts, { duplicates: 0, unrecorded: 0, blocked: 0 });
});

test("counts add up field by field", () => {
  const one = { duplicates: 1, unrecorded: 2, blocked: 3 };
  assert.deepEqual(addCounts(one, one), { duplicates: 2, unrecorded: 4, blocked: 6 });
});

test("the speed checks compare with the fastest peer of each kind", () => {
  const peers = { redis: { fresh: 100, replay: 300 }, memory: { fresh: 120, replay: 500 } };
  const checks = speedChecks({ fresh: 108, replay: 499 }, peers);
  assert.deepEqual(
    checks.map((c) => [c.value, c.met]),
    [
      ["0.900", true],
      ["0.998", false],
    ],
  );
  assert.match(checks[0]!.target, /memory/);
  assert.match(checks[1]!.target, /memory/);
});

test("fresh just under 0.9 x misses its target", () => {
  const [fresh] = speedChecks({ fresh: 89.9, replay: 1 }, { p: { fresh: 100, replay: 1 } });
  assert.equal(fresh!.met, false);
});

test("every fault round must end at 0 / 0 / 0, whichever count is not", () => {
  const zero = { duplicates: 0, unrecorded: 0, blocked: 0 };
  const checks = faultChecks({
    storm: zero,
    kill: { ...zero, blocked: 1 },
    die: { ...zero, unrecorded: 1 },
    redis: { ...zero, duplicates: 2 },
  });
  assert.deepEqual(
    checks.map((c) => [c.value, c.met]),
    [
      ["0 / 0 / 0", true],
      ["0 / 0 / 1", false],
      ["0 / 1 / 0", false],
      ["2 / 0 / 0", false],
    ],
  );
});

test("no peer, or no fault round, is an error, not a pass", () => {
  assert.throws(() => speedChecks({ fresh: 1, replay: 1 }, {}), /no peers/);
  assert.throws(() => faultChecks({}), /no fault round/);
});
