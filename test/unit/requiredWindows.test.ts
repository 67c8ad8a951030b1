/**
 * The fault run's `require_header` windows: what the verifier is told is a window must be a time when the header
 * really was required. Two windows of one client overlapped in seeds 318438351 and 1383136696 (the first one's
 * switch-off landed inside the second), and keyless requests rightly admitted were reported as violations.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { mustBeRefused, RequiredWindows } from "../../scripts/lib/faults/requiredWindows";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A client's header as the database would hold it, with every switch's time. */
function fakeSwitch({ offTakesMs = 5 } = {}) {
  const on = new Map<0 | 1, boolean>();
  const switches: { client: 0 | 1; on: boolean; at: number }[] = [];
  return {
    switches,
    isOn: (client: 0 | 1) => on.get(client) === true,
    async switchHeader(client: 0 | 1, to: boolean) {
      await sleep(to ? 5 : offTakesMs);
      on.set(client, to);
      switches.push({ client, on: to, at: Date.now() });
    },
  };
}

/** Every window the verifier gets lies inside a stretch when that client's header was on. */
function assertWindowsWereRequired(windows: RequiredWindows, switches: { client: 0 | 1; on: boolean; at: number }[]) {
  for (const w of windows.windows) {
    const before = switches.filter((s) => s.client === w.client && s.at <= w.from).at(-1);
    assert.equal(before?.on, true, `header on when window ${JSON.stringify(w)} began`);
    const inside = switches.filter((s) => s.client === w.client && s.at > w.from && s.at < w.to);
    assert.deepEqual(inside, [], "no switch-off inside a window");
  }
}

test("overlapping windows of one client keep the header on until the last ends, reported as one", async () => {
  const db = fakeSwitch();
  const windows = new RequiredWindows(db.switchHeader);
  const first = await windows.require(0, 60);
  await sleep(30);
  const second = await windows.require(0, 80);
  await first.ending;
  assert.equal(db.isOn(0), true, "still required: the second window is open");
  await second.ending;
  assert.equal(db.isOn(0), false);
  assert.deepEqual(
    db.switches.map((s) => s.on),
    [true, false],
  );
  assert.equal(windows.windows.length, 1);
  assertWindowsWereRequired(windows, db.switches);
});

test("a window that starts while the last one's switch-off is retrying waits for it, then switches on", async () => {
  // The switch-off retries while the database is down (scripts/lib/faults/run.ts), so it can take seconds.
  const db = fakeSwitch({ offTakesMs: 100 });
  const windows = new RequiredWindows(db.switchHeader);
  const first = await windows.require(1, 20);
  await sleep(30); // the first window ended; its switch-off has not committed yet
  const second = await windows.require(1, 40);
  assert.equal(db.isOn(1), true, "on once the second window began");
  await Promise.all([first.ending, second.ending]);
  assert.deepEqual(
    db.switches.map((s) => s.on),
    [true, false, true, false],
  );
  assertWindowsWereRequired(windows, db.switches);
});

test("windows of different clients are independent", async () => {
  const db = fakeSwitch();
  const windows = new RequiredWindows(db.switchHeader);
  const a = await windows.require(0, 20);
  const b = await windows.require(1, 60);
  await a.ending;
  assert.equal(db.isOn(0), false);
  assert.equal(db.isOn(1), true);
  await b.ending;
  assert.equal(windows.windows.length, 2);
  assertWindowsWereRequired(windows, db.switches);
});

test("only a keyless request answered inside a window had to be refused: one given up on may be read after it", () => {
  const windows = [{ client: 0 as const, from: 1_000, to: 9_000 }];
  const keyless = { client: 0 as const, key: null, sentAt: 2_000, doneAt: 4_000 };
  assert.equal(mustBeRefused(windows, { ...keyless, status: 400 }), true, "answered inside: read inside");
  assert.equal(mustBeRefused(windows, keyless), false, "given up on: the server may read it after the window");
  assert.equal(mustBeRefused(windows, { ...keyless, status: 201, key: "k" }), false, "a keyed request");
  assert.equal(mustBeRefused(windows, { ...keyless, status: 201, client: 1 }), false, "another client's window");
  assert.equal(mustBeRefused(windows, { ...keyless, status: 201, doneAt: 9_500 }), false, "answered after the end");
});
