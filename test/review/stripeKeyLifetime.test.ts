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
 * idempotency row and the first PaymentIntent) by 25 hours.
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

describe("a released claim older than the gateway's key lifetime", {
  skip: env.GATEWAY !== "stripe" && "GATEWAY=stripe only",
}, () => {
  test("is not charged again when it is retried", async () => {
    const key = uniqueKey("day-old");
    const body = chargeBody();
    // The first attempt, 25 h ago: the gateway charged, the app never heard back and released the claim.
    const record = await seedRecord({ apiClientId: clientId, phase: "released", key, body, ageMs: 25 * HOUR });
    const first = await chargeAtGateway(record, body);
    const gatewayKey = deriveGatewayKey(record);
    await gatewayDb.query(
      "UPDATE sim_stripe_idempotency SET created_at = created_at - INTERVAL 25 HOUR WHERE idempotency_key = ?",
      [gatewayKey],
    );
    await gatewayDb.query(
      `UPDATE sim_payment_intents SET created = created - 25 * 3600, created_at = created_at - INTERVAL 25 HOUR,
         searchable_at = searchable_at - INTERVAL 25 HOUR WHERE id = ?`,
      [first.id],
    );

    // The client (or an operator replaying a queue) retries the operation with its key.
    const retry = await postCharge({ apiKey, key, body });
    const atGateway = await gatewayCharges(body.customer_id);
    // What the periodic reconciliation would look at now: at most the last 24 h.
    const reconciliation = await reconcileLedger({ since: new Date(Date.now() - 24 * HOUR) });
    const doubles = reconciliation.findings.filter(
      (f) =>
        f.kind === "several_gateway_charges_for_one_operation" && atGateway.some((c) => c.id === f.gatewayChargeId),
    );
    try {
      console.log(
        `retry answered ${retry.status} ${retry.json?.gateway_charge_id ?? retry.text}; first charge ${first.id}; ` +
          `gateway charges ${atGateway.map((c) => c.id)}; ` +
          `app charges ${(await localCharges(body.customer_id)).length}; ` +
          `double-charge findings ${doubles.length}`,
      );
      assert.equal(atGateway.length, 1, "one operation, one charge at the gateway");
    } finally {
      // Take the first (aged) PaymentIntent out again, for the run's closing reconciliation.
      await removeGatewayCharges([first.id]);
      await db.ledgerMismatch.updateMany({
        where: { gatewayChargeId: { in: atGateway.map((c) => c.id) } },
        data: { resolvedAt: new Date() },
      });
    }
    assert.equal(doubles.length, 1, "the reconciliation reports the double charge");
  });
});
