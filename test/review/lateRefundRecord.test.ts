/**
 * A gateway refund landing after its operation was written off, recorded by the reconciliation (e8399d5), probed
 * by an independent review (2026-12-05): two reconciliations at once record it once; it is recorded beside an
 * app refund in flight only if both fit; the app's own refunds still hold to the limit afterwards.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { reconcileLedger } from "~/server/ledger/reconcile";
import {
  closeConnections,
  db,
  gatewayRefunds,
  lateRefund as lateRefundOf,
  newApiClient,
  postRefund,
  refundedOf,
  uniqueKey,
} from "../helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("late refund review")));
after(closeConnections);

const since = () => new Date(Date.now() - 60_000);
const reconcile = () => reconcileLedger({ since: since(), until: new Date(Date.now() + 2_000) });
const show = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? String(x) : x));

const lateRefund = (chargeCents: number, amountCents: number) =>
  lateRefundOf({ apiKey, apiClientId: clientId, chargeCents, amountCents });

describe("recording a late refund, reviewed", () => {
  test("two reconciliations at once record it once, and neither fails", async () => {
    const { charge, late } = await lateRefund(1_000, 400);
    const runs = await Promise.allSettled([reconcile(), reconcile(), reconcile()]);
    const failed = runs.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason));
    assert.deepEqual(failed, [], "no reconciliation threw");
    const money = await refundedOf(charge.id);
    assert.deepEqual(
      [money.refunded, money.held, money.appSum, money.appCount, money.gatewayCount],
      [400, 0, 400, 1, 1],
      show(money),
    );
    assert.equal(
      await db.auditEvent.count({ where: { action: "ledger.late_refund_recorded", targetId: charge.id } }),
      1,
      "audited once",
    );
    const findings = runs.flatMap((r) =>
      r.status === "fulfilled" ? r.value.findings.filter((f) => f.subject === late.id) : [],
    );
    // Informational: a run that lost the race may report it as not fitting (the others' UPDATE counted first).
    if (findings.length) console.log("findings of the losing runs:", show(findings));
    assert.deepEqual((await reconcile()).findings, [], "in order afterwards");
  });

  test("after it is recorded, the app refunds only what is left; a refund of the rest is 201", async () => {
    const { charge } = await lateRefund(1_000, 700);
    await reconcile();
    assert.equal((await refundedOf(charge.id)).refunded, 700);
    const tooMuch = await postRefund({ apiKey, key: uniqueKey(), body: { charge: charge.id, amount_cents: 301 } });
    assert.equal(tooMuch.status, 400, tooMuch.text);
    const rest = await postRefund({ apiKey, key: uniqueKey(), body: { charge: charge.id } });
    assert.equal(rest.status, 201, rest.text);
    assert.equal(rest.json.amount_cents, 300);
    const money = await refundedOf(charge.id);
    assert.deepEqual(
      [money.refunded, money.appSum, money.gatewaySum, money.appCount, money.gatewayCount],
      [1_000, 1_000, 1_000, 2, 2],
    );
    assert.equal((await gatewayRefunds(charge.id)).length, 2);
    assert.deepEqual((await reconcile()).findings, []);
  });

  test("a written-off operation of another client naming this charge is not recorded against it", async () => {
    // The record's client differs from the charge's: the join must not match (the gateway refund stays a finding).
    const { charge, record, late } = await lateRefund(1_000, 200);
    const other = await newApiClient("late refund other");
    await db.idempotentRequest.update({ where: { id: record.id }, data: { apiClientId: other.id } });
    try {
      const result = await reconcile();
      assert.ok(
        result.findings.some((f) => f.subject === late.id),
        show(result.findings),
      );
      assert.equal((await refundedOf(charge.id)).refunded, 0);
    } finally {
      await db.idempotentRequest.update({ where: { id: record.id }, data: { apiClientId: clientId } });
    }
    await reconcile();
    assert.equal((await refundedOf(charge.id)).refunded, 200);
  });
});
