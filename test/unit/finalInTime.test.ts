import assert from "node:assert/strict";
import { test } from "node:test";
import { answeredLate, SLACK_MS } from "../../scripts/lib/faults/finalInTime";

const bound = { reapAfterMs: 4_000, gatewayTimeoutMs: 1_500, lateLandingMs: 0 };
const limit = 4_000 + 1_500 + SLACK_MS;
const at = (ms: number) => new Date(1_000_000 + ms);
const record = (id: number, tookMs: number) => ({
  id: BigInt(id),
  route: "POST /api/charges",
  createdAt: at(0),
  lastAttemptAt: at(0),
  completedAt: at(tookMs),
  finishedBy: "abandoned",
});

test("an operation answered within REAP + the gateway timeout + the landing time + 10 s passes; later fails", () => {
  assert.deepEqual(answeredLate([record(1, limit)], bound, []), []);
  assert.equal(answeredLate([record(2, limit + 1)], bound, []).length, 1);
  assert.deepEqual(answeredLate([record(3, limit + 20_000)], { ...bound, lateLandingMs: 20_000 }, []), []);
});

test("the database's outages during the operation are added to its bound, only as far as they overlap it", () => {
  const outage = { from: at(2_000).getTime(), to: at(9_000).getTime() };
  assert.deepEqual(answeredLate([record(1, limit + 7_000)], bound, [outage]), []);
  assert.equal(answeredLate([record(2, limit + 7_001)], bound, [outage]).length, 1);
  const before = { from: at(-9_000).getTime(), to: at(-1).getTime() };
  assert.equal(answeredLate([record(3, limit + 1)], bound, [before]).length, 1, "an outage before it is no excuse");
});

/** A sweep begun at `startMs` that took `tookMs`. */
const sweep = (startMs: number, tookMs = 100) => ({
  startedAt: at(startMs).getTime(),
  finishedAt: at(startMs + tookMs).getTime(),
});

test("a late answer says what it waited on: its last attempt, who finished it, its longest wait for a sweep", () => {
  const [line] = answeredLate(
    [{ ...record(1, limit + 5_000), lastAttemptAt: at(2_000) }],
    bound,
    [],
    [sweep(1_000), sweep(3_000), sweep(15_000)],
  );
  assert.match(line!, /last attempt at \+2000 ms, finished by abandoned, no sweep started for 12000 ms/);
});

test("on a loaded machine the bound waits for the second sweep begun once the operation is due, not the clock", () => {
  const due = limit - SLACK_MS;
  // Sweeps 20 s apart: the second one after the due time ends 40.5 s after it.
  const slow = [sweep(due - 1_000), sweep(due + 20_000, 500), sweep(due + 40_000, 500), sweep(due + 60_000)];
  assert.deepEqual(answeredLate([record(1, due + 40_500)], bound, [], slow), []);
  assert.equal(answeredLate([record(2, due + 40_501)], bound, [], slow).length, 1, "later than that sweep: late");
  // Sweeps every second: the 10 s of slack is the bound, as without sweeps.
  const steady = Array.from({ length: 40 }, (_, i) => sweep(i * 1_000));
  assert.deepEqual(answeredLate([record(3, limit)], bound, [], steady), []);
  assert.equal(answeredLate([record(4, limit + 1)], bound, [], steady).length, 1);
});

test("only finished sweeps count; without sweeps (a dead sweeper) the bound is in time alone", () => {
  const due = limit - SLACK_MS;
  const unfinished = { startedAt: at(due + 20_000).getTime(), finishedAt: null };
  const sweeps = [sweep(due + 1_000), unfinished, sweep(due + 30_000)];
  assert.deepEqual(answeredLate([record(1, due + 30_100)], bound, [], sweeps), []);
  assert.equal(answeredLate([record(2, due + 30_101)], bound, [], sweeps).length, 1);
  assert.equal(answeredLate([record(3, limit + 1)], bound, [], []).length, 1, "no sweeps: the old bound");
});

test("an outage is added to the bound in time, not again to the sweeps after it", () => {
  const due = limit - SLACK_MS;
  const outage = { from: at(due).getTime(), to: at(due + 20_000).getTime() };
  // Sweeps every second once the database is back: the second ends 21.1 s after the due time.
  const after = Array.from({ length: 30 }, (_, i) => sweep(due + 20_000 + i * 1_000));
  assert.deepEqual(answeredLate([record(1, limit + 20_000)], bound, [outage], after), []);
  assert.equal(answeredLate([record(2, limit + 20_001)], bound, [outage], after).length, 1);
});
