import assert from "node:assert/strict";
import { test } from "node:test";
import { classifyPair, isLikelyDoubleCharge, NEW_KEY_RETRY_GAP_MS } from "~/server/customers/evidence";
import { gapHistogram, incidentCsv, type CsvCase } from "~/server/doubleCharges/incidentReport";

const A = "a".repeat(64);
const B = "b".repeat(64);
const t = (s: number) => new Date(Date.UTC(2026, 11, 4, 15, 0, s));

/** The founding incident: the first request arrived at 0 s, its client gave up at 15 s and sent it again. */
const first = (answers: { at: Date; status: number; clientGone: boolean }[] | null, settledAt = t(18)) => ({
  idempotencyKey: null,
  requestHash: A,
  requestedAt: t(0),
  settledAt,
  answers: answers?.map((a) => ({ ...a, latencyMs: 0 })) ?? null,
});
const second = (at = t(15), key: string | null = null, hash = A) => ({
  idempotencyKey: key,
  requestHash: hash,
  requestedAt: at,
  settledAt: new Date(at.getTime() + 18_000),
  answers: [],
});

test("identical requests, the second sent before the client had a 201 for the first: a retry", () => {
  // Its client had gone when the 201 was sent (a timeout at 15 s, the gateway took 18 s).
  assert.equal(classifyPair(second(), first([{ at: t(18), status: 201, clientGone: true }]), 15_000), "keyless_retry");
  // Answered an error (outcome unknown), the client still there: it could not know the money had moved.
  assert.equal(classifyPair(second(), first([{ at: t(5), status: 500, clientGone: false }]), 15_000), "keyless_retry");
  // The 201 reached the client, but only after the second request was sent.
  assert.equal(classifyPair(second(), first([{ at: t(16), status: 201, clientGone: false }]), 15_000), "keyless_retry");
  // No timeline at all, but the second came before the first was even settled.
  assert.equal(classifyPair(second(), first(null, t(60)), 15_000), "keyless_retry");
  // Under a new key per attempt, the same.
  const keyed = { ...first([{ at: t(18), status: 201, clientGone: true }]), idempotencyKey: "k1" };
  assert.equal(classifyPair(second(t(15), "k2"), keyed, 15_000), "new_key_retry");
});

test("identical requests, the second sent after the first's 201 reached its client: a repeat purchase", () => {
  const told = first([{ at: t(1), status: 201, clientGone: false }], t(1));
  assert.equal(classifyPair(second(t(2)), told, 2_000), "repeat_purchase");
  assert.equal(classifyPair(second(t(240)), told, 240_000), "repeat_purchase");
  // Keyed: a replay's 201 to the client counts as much as the first answer.
  const keyed = {
    ...first([
      { at: t(1), status: 201, clientGone: true },
      { at: t(3), status: 201, clientGone: false },
    ]),
    idempotencyKey: "k1",
  };
  assert.equal(classifyPair(second(t(10), "k2"), keyed, 10_000), "repeat_purchase");
  assert.equal(classifyPair(second(t(2), "k2"), keyed, 2_000), "new_key_retry");
  for (const e of ["repeat_purchase", "two_purchases", "no_evidence"] as const) assert.ok(!isLikelyDoubleCharge(e));
});

test("without a timeline, settled before the second came: keyless is a retry, keyed only close together", () => {
  const keyless = { idempotencyKey: null, requestHash: A };
  assert.equal(classifyPair(keyless, keyless, 16_000), "keyless_retry");
  assert.equal(classifyPair(keyless, keyless, 50 * 60_000), "keyless_retry");
  const one = { idempotencyKey: "k1", requestHash: A };
  const two = { idempotencyKey: "k2", requestHash: A };
  assert.equal(classifyPair(two, one, 15_500), "new_key_retry");
  assert.equal(classifyPair(two, one, NEW_KEY_RETRY_GAP_MS), "new_key_retry");
  assert.equal(classifyPair(two, one, NEW_KEY_RETRY_GAP_MS + 1), "two_purchases");
  // A keyed attempt retried without its key is the same mistake.
  assert.equal(classifyPair({ idempotencyKey: null, requestHash: A }, one, 5_000), "new_key_retry");
  // Settled before the second arrived and no answer on the timeline: the same fallback.
  assert.equal(classifyPair(second(t(30)), first(null, t(18)), 30_000), "keyless_retry");
});

test("different requests (another card token) are two purchases, keyed or not; a missing record is no evidence", () => {
  assert.equal(classifyPair(second(t(15), null, B), first([]), 15_000), "two_purchases");
  assert.equal(
    classifyPair({ idempotencyKey: "x", requestHash: A }, { idempotencyKey: "y", requestHash: B }, 1),
    "two_purchases",
  );
  assert.equal(classifyPair(null, { idempotencyKey: null, requestHash: A }, 1), "no_evidence");
  assert.equal(classifyPair({ idempotencyKey: null, requestHash: A }, undefined, 1), "no_evidence");
  assert.ok(isLikelyDoubleCharge("keyless_retry") && isLikelyDoubleCharge("new_key_retry"));
  assert.ok(!isLikelyDoubleCharge(null));
});

test("the gap histogram has a bucket per second up to a minute, trimmed to the range with data", () => {
  const h = gapHistogram([15_200, 15_900, 16_100, 17_000, 95_000]);
  assert.deepEqual(h[0], { fromSeconds: 15, toSeconds: 16, pairs: 2 });
  assert.deepEqual(h[1], { fromSeconds: 16, toSeconds: 17, pairs: 1 });
  assert.deepEqual(h[2], { fromSeconds: 17, toSeconds: 18, pairs: 1 });
  assert.deepEqual(h.at(-1), { fromSeconds: 60, toSeconds: 120, pairs: 1 });
  assert.equal(
    h.reduce((n, b) => n + b.pairs, 0),
    5,
  );
  assert.deepEqual(gapHistogram([]), []);
});

test("the CSV has the work list's columns, quotes what needs quoting and never starts a cell with a formula", () => {
  const c: CsvCase = {
    id: "ch_2",
    earlierId: "ch_1",
    customerId: "cus_1",
    apiClient: { name: 'Shop, "EU"' },
    evidence: { label: "Likely double charge, no key" },
    gapMs: 16_250,
    amountCents: 2500,
    currency: "usd",
    requestedAt: new Date("2026-12-04T15:00:16.250Z"),
    earlierRequestedAt: new Date("2026-12-04T15:00:00.000Z"),
    status: {
      state: "refunded",
      firstRefund: {
        chargeId: "ch_2",
        by: "Sam (sam@example.com)",
        at: new Date("2026-12-05T09:00:00.000Z"),
        notes: [{ note: "=charged twice" }],
      },
      leftCents: 0,
    },
  };
  const lines = incidentCsv({
    cases: [c, { ...c, id: "ch_3", status: { state: "to_refund", firstRefund: null, leftCents: 2500 } }],
  }).split("\r\n");
  assert.equal(
    lines[0],
    "customer_id,api_client,evidence,amount,currency,gap_seconds,first_request_at_utc,second_request_at_utc," +
      "first_charge_id,second_charge_id,refund,refunded_charge_id,refunded_by,refunded_at_utc,refund_note," +
      "left_to_give_back",
  );
  assert.equal(
    lines[1],
    'cus_1,"Shop, ""EU""","Likely double charge, no key",25.00,usd,16.250,2026-12-04T15:00:00.000Z,' +
      "2026-12-04T15:00:16.250Z,ch_1,ch_2,refunded,ch_2,Sam (sam@example.com),2026-12-05T09:00:00.000Z," +
      "'=charged twice,0.00",
  );
  assert.match(lines[2]!, /,ch_1,ch_3,not refunded,,,,,25\.00$/);
  assert.equal(lines[3], "");
});
