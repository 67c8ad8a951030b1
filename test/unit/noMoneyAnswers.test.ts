/**
 * The fault run's check that every stored "no money moved" is true at the gateway after healing
 * (scripts/lib/faults/noMoneyAnswers.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { contradictedAnswers, type NoMoneyAnswer, unrefunded } from "../../scripts/lib/faults/noMoneyAnswers";

const charge = (
  id: string,
  amountCents: number,
  key: string,
  requestId: string,
  status: "succeeded" | "declined" = "succeeded",
) => ({
  id,
  status,
  amountCents,
  idempotencyKey: key,
  metadata: { requestId, apiClientId: "1", idempotencyKey: null },
});
const refund = (id: string, chargeId: string, amountCents: number, key: string, requestId: string) => ({
  id,
  chargeId,
  amountCents,
  idempotencyKey: key,
  metadata: { requestId, apiClientId: "1", idempotencyKey: null },
});
const answer = (recordId: bigint, kind: "charge" | "refund", gatewayKey: string): NoMoneyAnswer => ({
  recordId,
  kind,
  key: null,
  gatewayKey,
  status: 500,
  code: "request_abandoned",
});

test("a charge is unrefunded until its refunds add up to all of it; a decline moved nothing", () => {
  const charges = [charge("ch_a", 1000, "gk_a", "1"), charge("ch_d", 500, "gk_d", "2", "declined")];
  assert.deepEqual(
    unrefunded(charges, [refund("re_1", "ch_a", 400, "gk_r1", "3")]).map((u) => [u.charge.id, u.refundedCents]),
    [["ch_a", 400]],
  );
  const whole = [refund("re_1", "ch_a", 400, "gk_r1", "3"), refund("re_2", "ch_a", 600, "gk_h", "1")];
  assert.deepEqual(unrefunded(charges, whole), []);
});

test("a written-off charge operation is in order with no succeeded charge under it (a decline moved nothing)", () => {
  const abandoned = answer(7n, "charge", "gk_7");
  assert.deepEqual(contradictedAnswers([abandoned], [charge("ch_x", 900, "gk_other", "8")], []), []);
  assert.deepEqual(contradictedAnswers([abandoned], [charge("ch_d", 900, "gk_7", "7", "declined")], []), []);
});

test("a written-off charge operation with a charge under it is a violation, kept or given back since", () => {
  const abandoned = answer(7n, "charge", "gk_7");
  const late = charge("ch_late", 900, "gk_7", "7");
  const [kept] = contradictedAnswers([abandoned], [late], []);
  assert.match(
    kept!,
    /charge record 7 \(keyless\) answered 500 request_abandoned, but the gateway charged 900 \(ch_late\)$/,
  );
  // "No charge was made" was untrue when it was said, even if the ledger has refunded the charge in full since.
  const [healed] = contradictedAnswers([abandoned], [late], [refund("re_heal", "ch_late", 900, "gk_7_heal", "7")]);
  assert.match(healed!, /given back in full since/);
  // Named by its metadata alone (another key), it is still the operation's money.
  assert.equal(contradictedAnswers([abandoned], [charge("ch_m", 900, "gk_else", "7")], []).length, 1);
});

test("a refund operation answered 'no refund made' has no gateway refund at all", () => {
  const declined = { ...answer(9n, "refund", "gk_9"), status: 402, code: "refund_declined" };
  assert.deepEqual(contradictedAnswers([declined], [], [refund("re_o", "ch_a", 100, "gk_10", "10")]), []);
  const [made] = contradictedAnswers([declined], [], [refund("re_9", "ch_a", 100, "gk_9", "9")]);
  assert.match(made!, /refund record 9 \(keyless\) answered 402 refund_declined, but the gateway refunded 100 of ch_a/);
});
