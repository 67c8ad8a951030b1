/**
 * The SDK's retry loop against the real app, where the network misbehaves in
 * ways a plain timeout test does not reach.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ChargesClient } from "~/client";
import { APP_URL, chargeBody, closeConnections, gatewayCharges, newApiClient } from "./helpers";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("sdk")));
after(closeConnections);

describe("SDK", () => {
  test("an answer whose body never arrives is retried with the same key and replayed", { timeout: 15_000 }, async () => {
    const keys: string[] = [];
    let attempts = 0;
    // The first answer reaches the client with its headers but its body never
    // completes, and ignores the abort signal: what Node's fetch does in
    // nodejs/undici#4232. The charge itself went through on the server.
    const stallingFetch: typeof fetch = async (input, init) => {
      keys.push(new Headers(init?.headers).get("Idempotency-Key") ?? "");
      const response = await fetch(input, init);
      if (++attempts > 1) return response;
      await response.text();
      return new Response(new ReadableStream({ start() {} }), { status: response.status, headers: response.headers });
    };
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey, attemptTimeoutMs: 1_000, baseDelayMs: 50, deadlineMs: 10_000, fetch: stallingFetch });
    const body = chargeBody();

    const result = await sdk.createCharge(body);

    assert.equal(result.ok, true);
    assert.equal(result.status, 201);
    assert.equal(result.replayed, true, "the second attempt gets the stored answer");
    assert.equal(result.attempts, 2);
    assert.equal(new Set(keys).size, 1, "both attempts carry the same Idempotency-Key");
    assert.equal((await gatewayCharges(body.customer_id)).length, 1);
  });
});
