/** The fault run's plan (scripts/lib/faults/plan.ts): its webhook faults and receiver fates, replayed by seed. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { makePlan, RECEIVERS } from "../../scripts/lib/faults/plan";

const plan = (seed: number, durationMs = 100_000) => makePlan(seed, durationMs, 6, { lateRequests: true });
const webhookFaults = (p: ReturnType<typeof plan>) =>
  p.faults.filter((f) => f.kind === "receiver_away" || f.kind === "kill_dispatcher");

test("the same seed gives the same webhook faults and receiver fates", () => {
  assert.deepEqual(webhookFaults(plan(7)), webhookFaults(plan(7)));
  assert.deepEqual(plan(7).receiverFates, plan(7).receiverFates);
  assert.notDeepEqual(plan(7).receiverFates, plan(8).receiverFates);
});

test("webhook faults come every 6-14 s inside the load, beside the others", () => {
  for (const seed of [1, 2, 3]) {
    const faults = webhookFaults(plan(seed));
    assert.ok(faults.length >= 6 && faults.length <= 16, `${faults.length} in 100 s`);
    assert.ok(faults.every((f) => f.at >= 6_000 && f.at <= 95_000));
    for (const [i, f] of faults.slice(1).entries()) {
      const gap = f.at - faults[i]!.at;
      assert.ok(gap >= 6_000 && gap <= 14_000, `gap ${gap}`);
    }
    assert.ok(faults.every((f) => f.kind !== "kill_dispatcher" || f.count === 1 || f.count === 2));
  }
  // Drawn from a seed of their own, beside the others (which keep their cadences and seeds).
  const all = plan(5).faults;
  assert.ok(all.some((f) => f.kind === "stall_storage") && all.some((f) => f.kind === "kill_app"));
  assert.deepEqual(
    all.map((f) => f.at),
    all.map((f) => f.at).sort((a, b) => a - b),
    "one plan, in time order",
  );
});

test("over a few 100 s runs: receivers away, dispatchers killed, and two dispatchers started at once", () => {
  const faults = [1, 2, 3].flatMap((seed) => webhookFaults(plan(seed)));
  assert.ok(faults.some((f) => f.kind === "receiver_away"));
  assert.ok(faults.some((f) => f.kind === "kill_dispatcher" && f.count === 1));
  assert.ok(faults.some((f) => f.kind === "kill_dispatcher" && f.count === 2));
});

test("every receiver misbehaves in every planned way, about a third of its requests", () => {
  const { receiverFates } = plan(11);
  assert.equal(receiverFates.length, RECEIVERS);
  for (const fates of receiverFates) {
    const kinds = new Set(fates.map((f) => f.kind));
    assert.deepEqual([...kinds].sort(), ["drop", "fail", "ok", "past_timeout", "slow"]);
    const bad = fates.filter((f) => f.kind !== "ok").length / fates.length;
    assert.ok(bad > 0.25 && bad < 0.45, `misbehaving share ${bad}`);
  }
});
