/**
 * FINDING: a keyless request whose gateway outcome is unknown is answered
 * 503 gateway_unavailable, "retry with the same Idempotency-Key" (action:
 * retry, Retry-After), although it has no key; the answer names nothing the
 * client could retry or look up with. A client that does as told sends the
 * payment again: a new keyless record, a new derived gateway key, and the
 * customer is charged once per attempt. The sweeper later records every one of
 * those charges (so the ledger "adds up"), but the customer paid N times for one
 * payment.
 *
 * During the rollout most traffic is keyless (issue 19), and the answer is
 * the server's own advice. A keyless unknown outcome should say "do not
 * resend; the charge may have been made" and give the client a handle on
 * the operation (the record id, or the server-side key under which a retry
 * is the same operation), or the server should hand keyless clients a key.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  chargeBody, closeConnections, gatewayCharges, localCharges, newApiClient, postCharge, sweepUntil,
} from "../helpers";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("review keyless advice")));
after(closeConnections);

describe("a keyless request whose outcome is unknown", () => {
  test("does not lead a client that follows the answer into a second charge", { timeout: 60_000 }, async () => {
    // Charged, then the gateway answers 500: the outcome is unknown to the app.
    const body = chargeBody({ card_token: "tok_charge_then_error" });
    const first = await postCharge({ apiKey, body });
    assert.equal(first.status, 503, first.text);
    const advice = { code: first.json.error.code, message: first.json.error.message, retryAfter: first.headers.get("retry-after") };
    console.log(`answer to the keyless request: ${first.status} ${JSON.stringify(advice)}`);

    // The client does what the answer says: waits Retry-After and sends the request again (it has no key to send).
    await new Promise((r) => setTimeout(r, Number(advice.retryAfter ?? 1) * 1000));
    const again = await postCharge({ apiKey, body });
    console.log(`the retry: ${again.status} ${again.json?.error?.code ?? ""}`);

    // Let the sweeper finish both records, then count what the customer paid.
    await sweepUntil("the sweeper to record the charges", async () => (await localCharges(body.customer_id)).length >= 2);
    const charged = await gatewayCharges(body.customer_id);
    assert.equal(charged.length, 1, `one payment, charged ${charged.length} times (${charged.map((c) => c.id)})`);
  });
});
