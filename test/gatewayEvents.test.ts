/**
 * The gateway's own events settle unknown outcomes in seconds (issue 41, item 6), through either gateway: the
 * simulator sends Stripe's events, signed as Stripe signs them, to POST /api/gateway/events, which verifies them
 * with the official SDK and finishes the operation an event names under the same fence as a retry, asking the
 * gateway what happened (REAP_AFTER_MS is 60 s here: no sweeper is involved). Forged, late, replayed and
 * misleading events change nothing wrongly.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import Stripe from "stripe";
import { env } from "~/env";
import type { IdempotencyRecord } from "~/server/idempotency";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { gatewayEventsUrl, registerGatewayWebhook, removeGatewayWebhooks } from "../scripts/lib/gatewayWebhook";
import {
  APP_URL,
  assertError,
  chargeBody,
  closeConnections,
  db,
  gatewayCharges,
  gatewayRefunds,
  localCharges,
  newApiClient,
  newCharge,
  postCharge,
  postRefund,
  recordOf,
  uniqueKey,
  waitFor,
} from "./helpers";

const gatewayUrl = env.GATEWAY_URL;
const secret = env.GATEWAY_WEBHOOK_SECRET!;
let apiKey: string;

const listen = () => registerGatewayWebhook(gatewayUrl, APP_URL, secret);
const stopListening = () => removeGatewayWebhooks(gatewayUrl, gatewayEventsUrl(APP_URL));

before(async () => {
  ({ apiKey } = await newApiClient("gateway events"));
  await listen();
});
after(async () => {
  await stopListening();
  await closeConnections();
});

/**
 * The receipt of the event that finished record `id`: written just after the record's completion (receive.ts), so
 * a test that saw the record complete waits for it rather than reading it at once.
 */
const receiptOf = (id: bigint) =>
  waitFor("the event's receipt", () => db.gatewayEvent.findFirst({ where: { idempotentRequestId: id } }));

/** An event as the gateway would send it about `record`, signed with `signWith` at `timestamp` (seconds). */
async function sendEvent(
  type: string,
  record: Pick<IdempotencyRecord, "id" | "apiClientId">,
  { signWith = secret, timestamp = Math.floor(Date.now() / 1000), id = `evt_${randomBytes(12).toString("hex")}` } = {},
) {
  const metadata = { request_id: String(record.id), api_client_id: String(record.apiClientId) };
  const payload = JSON.stringify({ id, object: "event", type, created: timestamp, data: { object: { metadata } } });
  const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: signWith, timestamp });
  const res = await fetch(`${APP_URL}/api/gateway/events`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "Stripe-Signature": signature },
    body: payload,
  });
  return { status: res.status, json: (await res.json()) as { outcome?: string; error?: { code: string } }, id };
}

const complete = (key: string, route?: string) =>
  waitFor(
    "the gateway's event to settle the operation",
    async () => {
      const record = await recordOf(key, route);
      return record?.phase.name === "complete" && record;
    },
    20_000,
  );

describe("the gateway's events settle unknown outcomes", () => {
  test("charged, then a 500: the event settles the charge, with no retry and no sweep", async () => {
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_charge_then_error" });
    assertError(await postCharge({ apiKey, key, body }), 503, "gateway_unavailable");
    const record = await complete(key);
    assert.equal(record.phase.name === "complete" && record.phase.response.status, 201);
    const receipt = await receiptOf(record.id);
    assert.equal(receipt?.outcome, "settled", "the event finished it");
    assert.equal(receipt?.type, "payment_intent.succeeded");
    assert.equal((await gatewayCharges(body.customer_id)).length, 1);
    assert.equal((await localCharges(body.customer_id)).length, 1);
    // The merchant is told at once too: its event, written with the charge the gateway's event settled.
    const told = await db.event.findMany({ where: { requestId: record.id } });
    assert.deepEqual(
      told.map((e) => e.type),
      ["charge.succeeded"],
    );
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.headers.get("idempotent-replay"), "true");
  });

  test("refunded, then a 500: the event settles the refund", async () => {
    const charge = await newCharge(apiKey, { card_token: "tok_refund_then_error" });
    const key = uniqueKey("refund");
    const refund = await postRefund({ apiKey, key, body: { charge, amount_cents: 400 } });
    assertError(refund, 503, "gateway_unavailable");
    const record = await complete(key, REFUNDS_ROUTE);
    assert.equal(record.phase.name === "complete" && record.phase.response.status, 201);
    const receipt = await receiptOf(record.id);
    assert.equal(receipt?.outcome, "settled");
    assert.equal((await gatewayRefunds(charge)).length, 1);
    assert.equal(await db.refund.count({ where: { chargeId: charge } }), 1);
    const told = await db.event.findMany({ where: { requestId: record.id } });
    assert.deepEqual(
      told.map((e) => e.type),
      ["refund.succeeded"],
    );
  });
});

describe("events that must change nothing", () => {
  test("forged (another secret) or signed too long ago: 400, nothing done", async () => {
    await stopListening();
    try {
      const key = uniqueKey();
      assertError(
        await postCharge({ apiKey, key, body: chargeBody({ card_token: "tok_charge_then_error" }) }),
        503,
        "gateway_unavailable",
      );
      const record = (await recordOf(key))!;
      const forged = await sendEvent("payment_intent.succeeded", record, { signWith: `whsec_${"x".repeat(32)}` });
      assert.equal(forged.status, 400);
      assert.equal(forged.json.error?.code, "invalid_signature");
      const stale = await sendEvent("payment_intent.succeeded", record, {
        timestamp: Math.floor(Date.now() / 1000) - 600,
      });
      assert.equal(stale.status, 400, "older than the SDK's 5-minute tolerance");
      assert.equal((await recordOf(key))?.phase.name, "released", "still unfinished: nothing acted");
      assert.equal(await db.gatewayEvent.count({ where: { id: { in: [forged.id, stale.id] } } }), 0);
    } finally {
      await listen();
    }
  });

  test("a misleading event (payment failed, for a charge made) settles what the gateway says: the charge", async () => {
    await stopListening();
    try {
      const key = uniqueKey();
      const body = chargeBody({ card_token: "tok_charge_then_error" });
      assertError(await postCharge({ apiKey, key, body }), 503, "gateway_unavailable");
      const record = (await recordOf(key))!;
      // Another client's operation is not this event's to settle.
      const foreign = await sendEvent("payment_intent.succeeded", { ...record, apiClientId: record.apiClientId + 1 });
      assert.deepEqual([foreign.status, foreign.json.outcome], [200, "not_ours"]);
      const failed = await sendEvent("payment_intent.payment_failed", record);
      assert.deepEqual([failed.status, failed.json.outcome], [200, "settled"]);
      const settled = (await recordOf(key))!;
      assert.equal(settled.phase.name === "complete" && settled.phase.response.status, 201, "the truth: charged");
      assert.equal((await localCharges(body.customer_id)).length, 1);
      // Replayed: the same event again is known by its id; a new event about a final operation does nothing.
      const replay = await sendEvent("payment_intent.payment_failed", record, { id: failed.id });
      assert.deepEqual([replay.status, replay.json.outcome], [200, "duplicate"]);
      const later = await sendEvent("payment_intent.succeeded", record);
      assert.deepEqual([later.status, later.json.outcome], [200, "already_final"]);
      assert.equal((await gatewayCharges(body.customer_id)).length, 1, "nothing charged again");
    } finally {
      await listen();
    }
  });
});
