import assert from "node:assert/strict";
import { test } from "node:test";
import { classifyPair, isLikelyDoubleCharge, NEW_KEY_RETRY_GAP_MS } from "~/server/customers/evidence";
import { gapHistogram, incidentCsv, type CsvPair } from "~/server/customers/incidentReport";

const A = "a".repeat(64);
const B = "b".repeat(64);

test("two keyless identical requests are a likely double charge, whatever the gap within the window", () => {
  const keyless = { idempotencyKey: null, requestHash: A };
  assert.equal(classifyPair(keyless, keyless, 16_000), "keyless_retry");
  assert.equal(classifyPair(keyless, keyless, 50 * 60_000), "keyless_retry");
});

test("identical requests under two keys: a new key per attempt close together, two purchases far apart", () => {
  const first = { idempotencyKey: "k1", requestHash: A };
  const second = { idempotencyKey: "k2", requestHash: A };
  assert.equal(classifyPair(second, first, 15_500), "new_key_retry");
  assert.equal(classifyPair(second, first, NEW_KEY_RETRY_GAP_MS), "new_key_retry");
  assert.equal(classifyPair(second, first, NEW_KEY_RETRY_GAP_MS + 1), "two_purchases");
  // A keyed attempt retried without its key is the same mistake.
  assert.equal(classifyPair({ idempotencyKey: null, requestHash: A }, first, 5_000), "new_key_retry");
});

test("different requests (another card token) are two purchases, keyed or not; a missing record is no evidence", () => {
  assert.equal(
    classifyPair({ idempotencyKey: null, requestHash: A }, { idempotencyKey: null, requestHash: B }, 1),
    "two_purchases",
  );
  assert.equal(
    classifyPair({ idempotencyKey: "x", requestHash: A }, { idempotencyKey: "y", requestHash: B }, 1),
    "two_purchases",
  );
  assert.equal(classifyPair(null, { idempotencyKey: null, requestHash: A }, 1), "no_evidence");
  assert.equal(classifyPair({ idempotencyKey: null, requestHash: A }, undefined, 1), "no_evidence");
  assert.ok(isLikelyDoubleCharge("keyless_retry") && isLikelyDoubleCharge("new_key_retry"));
  assert.ok(
    !isLikelyDoubleCharge("two_purchases") && !isLikelyDoubleCharge("no_evidence") && !isLikelyDoubleCharge(null),
  );
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

test("the CSV quotes what needs quoting and never starts a cell with a formula", () => {
  const pair: CsvPair = {
    id: "ch_2",
    earlierId: "ch_1",
    customerId: "cus_1",
    apiClient: { name: 'Shop, "EU"' },
    evidence: { label: "Likely double charge, no key" },
    gapMs: 16_250,
    amountCents: 2500,
    currency: "usd",
    createdAt: new Date("2026-12-04T15:00:00.000Z"),
    requests: { later: { idempotencyKey: "=HYPERLINK()" }, earlier: null },
  };
  const lines = incidentCsv({ customers: [{ pairs: [pair] }] }).split("\r\n");
  assert.equal(lines[0]!.split(",")[0], "customer_id");
  assert.equal(
    lines[1],
    'cus_1,"Shop, ""EU""","Likely double charge, no key",16.250,25.00,usd,ch_2,' +
      "2026-12-04T15:00:00.000Z,ch_1,'=HYPERLINK(),",
  );
  assert.equal(lines[2], "");
});
