/**
 * FINDING (GATEWAY=stripe): a released claim retried after Stripe forgot its
 * idempotency key (24 h) charges a second time, and the reconciliation does not
 * see the double charge.
 *
 * "An in-progress record, however old, is finished by the sweeper" and a retry
 * of a released record "calls the gateway again under the same derived key (the
 * gateway answers with the charge it already made)". That holds only while the
 * gateway remembers the key: Stripe keeps idempotency keys for 24 hours (the
 * simulator's Stripe mode too). A record left released for longer (the sweeper
 * down for a day, or its lookups failing: a restricted key without search
 * permission, say) and then retried makes a second PaymentIntent under the same
 * derived key. The reconciliation misses it: its windows reach back 24 h at
 * most, and `doubleCharges` excuses two charges of one operation made a key
 * lifetime apart, although both name the same record in their metadata.
 *
 * Time is moved by ageing the first attempt (the record, the simulator's
 * idempotency row and the first PaymentIntent) by 25 hours. The fix: the
 * adapter looks for the PaymentIntent of an attempt older than the key's
 * lifetime before it creates one, and the reconciliation groups gateway
 * charges by the record they name, however far apart they were made.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { env } from "~/env";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { deriveGatewayKey } from "~/server/gateway";
import { reconcileLedger } from "~/server/ledger/reconcile";
import {
  chargeAtGateway,
  chargeBody,
  closeConnections,
  db,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  removeGatewayCharges,
  seedRecord,
  uniqueKey,
} from "../helpers";

const HOUR = 3_600_000;
let apiKey: string;
let clientId: number;
let gatewayDb: mariadb.Pool;
before(async () => {
  ({ apiKey, id: clientId } = await newApiClient("review stripe key lifetime"));
  gatewayDb = mariadb.createPool({
    ...mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!),
    connectionLimit: 2,
  });
});
after(async () => {
  await gatewayDb.end();
  await closeConnections();
});

/** Moves the first attempt 25 h into the past: the simulator's idempotency row for the key and the PaymentIntent. */
async function ageAtGateway(gatewayKey: string, intentId: string) {
  await gatewayDb.query(
    "UPDATE sim_stripe_idempotency SET created_at = created_at - INTERVAL 25 HOUR WHERE idempotency_key = ?",
    [gatewayKey],
  );
  await gatewayDb.query(
    `UPDATE sim_payment_intents SET created = created - 25 * 3600, created_at = created_at - INTERVAL 25 HOUR,
       searchable_at = searchable_at - INTERVAL 25 HOUR WHERE id = ?`,
    [intentId],
  );
}

describe("a released claim older than the gateway's key lifetime", {
  skip: env.GATEWAY !== "stripe" && "GATEWAY=stripe only",
}, () => {
  test("is not charged again when it is retried", async () => {
    const key = uniqueKey("day-old");
    const body = chargeBody();
    // The first attempt, 25 h ago: the gateway charged, the app never heard back and released the claim.
    const record = await seedRecord({ apiClientId: clientId, phase: "released", key, body, ageMs: 25 * HOUR });
    const first = await chargeAtGateway(record, body);
    await ageAtGateway(deriveGatewayKey(record), first.id);

    // The client (or an operator replaying a queue) retries the operation with its key.
    const retry = await postCharge({ apiKey, key, body });
    const atGateway = await gatewayCharges(body.customer_id);
    console.log(
      `retry answered ${retry.status} ${retry.json?.gateway_charge_id ?? retry.text}; first charge ${first.id}; ` +
        `gateway charges ${atGateway.map((c) => c.id)}; app charges ${(await localCharges(body.customer_id)).length}`,
    );
    assert.equal(atGateway.length, 1, "one operation, one charge at the gateway");
    assert.equal(retry.status, 201);
    assert.equal(retry.json.gateway_charge_id, first.id, "the retry is answered with the charge made a day ago");
    // The aged PaymentIntent stays: the run's closing reconciliation finds the app charge's by its key.
  });

  test("two PaymentIntents of one record made a key lifetime apart are reported as a double charge", async () => {
    const key = uniqueKey("day-old-double");
    const body = chargeBody();
    const record = await seedRecord({ apiClientId: clientId, phase: "released", key, body, ageMs: 25 * HOUR });
    const first = await chargeAtGateway(record, body);
    await ageAtGateway(deriveGatewayKey(record), first.id);
    // What the adapter's look-back prevents (the test above), done directly: a create under the key Stripe has
    // forgotten makes a second PaymentIntent for the same record.
    const second = await chargeAtGateway(record, body);
    try {
      assert.notEqual(second.id, first.id, "the simulator forgot the key after 24 h, as Stripe does");
      const reconciliation = await reconcileLedger({ since: new Date(Date.now() - 26 * HOUR) });
      const doubles = reconciliation.findings.filter((f) => f.kind === "several_gateway_charges_for_one_operation");
      assert.ok(
        doubles.some((f) => f.gatewayChargeId === second.id),
        `the double charge is reported: ${JSON.stringify(doubles.map((f) => f.gatewayChargeId))}`,
      );
    } finally {
      // Out of the way of the run's closing reconciliation: the money was never the app's to keep, and what the
      // reconciliation repaired with it (an app charge, the completed record) goes with it.
      const ids = [first.id, second.id];
      await removeGatewayCharges(ids);
      await db.charge.deleteMany({ where: { gatewayChargeId: { in: ids } } });
      await db.idempotentRequest.delete({ where: { id: record.id } });
      await db.ledgerMismatch.updateMany({ where: { gatewayChargeId: { in: ids } }, data: { resolvedAt: new Date() } });
    }
  });
});
