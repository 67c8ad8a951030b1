import assert from "node:assert/strict";
import { test } from "node:test";
import { ImpossibleRecordError, phaseOf, TRANSITIONS, type RecordRow } from "~/server/idempotency/lifecycle";
import { phaseDisplay } from "~/server/requests/phaseDisplay";

const now = new Date("2026-12-03T12:00:00Z");
const row = (over: Partial<RecordRow>): RecordRow => ({
  id: 1n,
  idempotencyKey: new Uint8Array(Buffer.from("k")),
  route: "POST /api/charges",
  apiClientId: 1,
  requestHash: "0".repeat(64),
  state: "in_progress",
  attempt: 1,
  leaseExpiresAt: null,
  responseStatus: null,
  responseBody: null,
  responseRequestId: null,
  finishedBy: null,
  lastAttemptAt: now,
  createdAt: now,
  updatedAt: now,
  expiresAt: now,
  ...over,
});

test("the phase is decoded from the columns, the lease against the clock", () => {
  assert.equal(phaseOf(row({ leaseExpiresAt: new Date(now.getTime() + 1) }), now).name, "held");
  assert.equal(phaseOf(row({ leaseExpiresAt: now }), now).name, "lease_expired");
  assert.equal(phaseOf(row({}), now).name, "released");
  const complete = phaseOf(
    row({ state: "complete", finishedBy: "reconciled", responseStatus: 201, responseBody: "{}" }),
    now,
  );
  assert.deepEqual(complete, {
    name: "complete",
    finishedBy: "reconciled",
    response: { status: 201, body: "{}" },
  });
});

test("a record in an impossible state is an error, not a made-up status", () => {
  const impossible: Partial<RecordRow>[] = [
    { state: "complete", finishedBy: null, responseStatus: 201, responseBody: "{}" },
    { state: "complete", finishedBy: "request", responseStatus: null, responseBody: null },
    { state: "complete", finishedBy: "request", responseStatus: 201, responseBody: "{}", leaseExpiresAt: now },
    { state: "in_progress", finishedBy: "abandoned" },
    { state: "in_progress", responseStatus: 500 },
  ];
  for (const over of impossible)
    assert.throws(() => phaseOf(row(over), now), ImpossibleRecordError, JSON.stringify(over));
});

test("every phase has a label and a description for people", () => {
  for (const phase of [
    phaseOf(row({ leaseExpiresAt: new Date(now.getTime() + 1) }), now),
    phaseOf(row({ leaseExpiresAt: now }), now),
    phaseOf(row({}), now),
    ...(["request", "reconciled", "abandoned"] as const).map((finishedBy) =>
      phaseOf(row({ state: "complete", finishedBy, responseStatus: 201, responseBody: "{}" }), now),
    ),
  ]) {
    const shown = phaseDisplay(phase);
    assert.ok(shown.label.length > 0 && shown.description.length > 10, JSON.stringify(shown));
  }
});

test("only complete records expire; in-progress ones are finished, and deleted only by their own claimer", () => {
  assert.deepEqual(TRANSITIONS.expire.from, ["complete"]);
  // A keyless claim refused by its admission, before any work: held (or its lease just ended), never released.
  assert.deepEqual(TRANSITIONS.withdraw.from, ["held", "lease_expired"]);
  assert.ok(!TRANSITIONS.take.from.includes("held"), "a live lease is never taken over");
});
