/** What each kind of gateway answer comes to for the client: stored declines, released claims, late charges. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertError,
  chargeBody,
  closeConnections,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  recordOf,
  uniqueKey,
} from "./helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("gateway outcomes")));
after(closeConnections);

describe("gateway outcomes", () => {
  test("decline -> 402 card_declined, stored and replayed", async () => {
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_declined" });
    const first = await postCharge({ apiKey, key, body });
    assertError(first, 402, "card_declined");
    assert.match(first.json.error.charge, /^ch_/);
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 402);
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal(retry.text, first.text);
    assert.equal((await gatewayCharges(body.customer_id)).length, 1, "the gateway was asked once");
  });

  test("gateway error -> 503 with Retry-After, claim released, retry allowed", async () => {
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_error" });
    const first = await postCharge({ apiKey, key, body });
    assertError(first, 503, "gateway_unavailable");
    assert.equal(first.headers.get("retry-after"), "2");
    assert.equal((await recordOf(key))?.phase.name, "released");
    // The retry takes the claim again and reaches the gateway again (not a 409).
    assertError(await postCharge({ apiKey, key, body }), 503, "gateway_unavailable");
    // A different payload under the released key is still a reuse.
    assertError(await postCharge({ apiKey, key, body: { ...body, amount_cents: 1 } }), 422, "idempotency_key_reused");
  });

  test("charged, then a 500 -> 503; the first keyed retry settles it with the one charge", async () => {
    // Through Stripe the retry's create is answered with the 500 Stripe saved under the key, every time: the
    // adapter must learn the charge from a strongly consistent read, not from that 500 nor from the search.
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_charge_then_error" });
    assertError(await postCharge({ apiKey, key, body }), 503, "gateway_unavailable");
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 201, retry.text); // on this retry, not a later one or the sweeper
    assert.equal((await gatewayCharges(body.customer_id)).length, 1, "the gateway charged once");
    assert.equal((await localCharges(body.customer_id)).length, 1);
    assert.equal(retry.json.gateway_charge_id, (await gatewayCharges(body.customer_id))[0]!.id);
  });

  test("gateway slower than its timeout -> 503; the retry gets the charge the gateway made, once", async () => {
    const key = uniqueKey();
    // GATEWAY_TIMEOUT_MS is 5000 in tests; the gateway charges at once but answers after 6 s.
    const body = chargeBody({ card_token: "tok_slow_6000" });
    assertError(await postCharge({ apiKey, key, body }), 503, "gateway_unavailable");
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 201, retry.text);
    assert.equal((await gatewayCharges(body.customer_id)).length, 1, "the gateway charged once");
    assert.equal((await localCharges(body.customer_id)).length, 1);
  });
});
