/**
 * Retries that wait instead of hammering (Prefer: wait, RFC 7240), and
 * settling an operation without resending it (GET /api/charges?idempotency_key=K),
 * against the real server, and through the SDK.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ChargesClient } from "@charges/client";
import { serializeKey } from "@charges/client/idempotencyProtocol";
import {
  APP_URL,
  chargeBody,
  closeConnections,
  gatewayCharges,
  newApiClient,
  postCharge,
  startAppInstance,
  uniqueKey,
} from "./helpers";

const OTHER_PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 5;
const OTHER_URL = `http://127.0.0.1:${OTHER_PORT}`;

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("waiting")));
after(closeConnections);

const getOperation = (key: string, as = apiKey) =>
  fetch(`${APP_URL}/api/charges?idempotency_key=${encodeURIComponent(key)}`, {
    headers: { Authorization: `Bearer ${as}` },
  });

describe("Prefer: wait", () => {
  test("a retry into the process holding the claim waits for the answer: a replay, not a 409", async () => {
    const key = uniqueKey("wait-here");
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    const retry = await postCharge({ apiKey, key, body, headers: { Prefer: "wait=5" } });
    assert.equal(retry.status, 201, retry.text);
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal(retry.headers.get("preference-applied"), "wait=5");
    assert.ok(Date.now() - started < 3_000, "answered as soon as the first request finished");
    assert.equal(retry.text, (await first).text);
  });

  test("a retry into another instance polls the record and gets the replay", async () => {
    const other = await startAppInstance(OTHER_PORT);
    try {
      const key = uniqueKey("wait-elsewhere");
      const body = chargeBody({ card_token: "tok_slow_1500" });
      const first = postCharge({ apiKey, key, body });
      await new Promise((r) => setTimeout(r, 300));
      const retry = await postCharge({ apiKey, key, body, baseUrl: OTHER_URL, headers: { Prefer: "wait=5" } });
      assert.equal(retry.status, 201, retry.text);
      assert.equal(retry.headers.get("idempotent-replay"), "true");
      assert.equal(retry.text, (await first).text);
      assert.equal((await gatewayCharges(body.customer_id)).length, 1);
    } finally {
      await other.stop();
    }
  });

  test("still in flight when the wait is over: 409 with Retry-After and Preference-Applied", async () => {
    const key = uniqueKey("wait-short");
    const body = chargeBody({ card_token: "tok_slow_3000" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    const retry = await postCharge({ apiKey, key, body, headers: { Prefer: "respond-async, wait=1" } });
    const took = Date.now() - started;
    assert.equal(retry.status, 409, retry.text);
    assert.equal(retry.json.error.code, "request_in_progress");
    assert.ok(retry.headers.get("retry-after"));
    assert.equal(retry.headers.get("preference-applied"), "wait=1");
    assert.ok(took >= 900 && took < 2_500, `waited ${took} ms`);
    assert.equal(typeof retry.json.error.age_seconds, "number");
    await first;
    const fresh = await postCharge({ apiKey, key: uniqueKey(), body: chargeBody(), headers: { Prefer: "wait=5" } });
    assert.equal(fresh.status, 201, "a fresh request does its own work: nothing to wait for");
    assert.equal(fresh.headers.get("preference-applied"), null);
  });

  test("without Prefer, an in-flight retry gets its 409 at once", async () => {
    const key = uniqueKey("no-wait");
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 409);
    assert.equal(retry.headers.get("preference-applied"), null);
    await first;
  });
});

describe("GET /api/charges?idempotency_key=K", () => {
  test("in flight -> 409 with its age; complete -> stored answer, replayed; other client, no key -> 404", async () => {
    const key = uniqueKey("settle");
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    const inFlight = await getOperation(key);
    assert.equal(inFlight.status, 409);
    const inFlightBody = await inFlight.json();
    assert.equal(inFlightBody.error.code, "request_in_progress");
    assert.ok(inFlightBody.error.age_seconds >= 0);
    assert.ok(inFlight.headers.get("retry-after"));

    const created = await first;
    const settled = await getOperation(key);
    assert.equal(settled.status, 201);
    assert.equal(settled.headers.get("idempotent-replay"), "true");
    assert.equal(settled.headers.get("idempotent-replayed"), "true");
    assert.equal(await settled.text(), created.text, "the stored bytes");

    const stranger = await newApiClient("settle-stranger");
    assert.equal((await getOperation(key, stranger.apiKey)).status, 404, "another client's key reveals nothing");
    assert.equal((await getOperation(uniqueKey("never-sent"))).status, 404);
    // Without a key the same path lists the client's charges (test/lists.test.ts).
    const list = await fetch(`${APP_URL}/api/charges`, { headers: { Authorization: `Bearer ${apiKey}` } });
    assert.equal(list.status, 200);
    assert.equal((await list.json()).object, "list");
    const empty = await fetch(`${APP_URL}/api/charges?idempotency_key=`, {
      headers: { Authorization: `Bearer ${apiKey}` },
    });
    assert.equal(empty.status, 400);
    assert.equal((await empty.json()).error.code, "invalid_idempotency_key");
    assert.equal((await fetch(`${APP_URL}/api/charges?idempotency_key=x`)).status, 401);
  });

  test("the query takes the key in either of the header's forms, through the same parser", async () => {
    // A key with an escaped quote and a comma: only its structured-field form can carry it.
    const key = `${uniqueKey("sf")}, "x"`;
    const quoted = serializeKey(key);
    const created = await postCharge({ apiKey, key: quoted, body: chargeBody() });
    assert.equal(created.status, 201, created.text);
    const found = await getOperation(quoted);
    assert.equal(found.status, 201, "the structured-field form names the key the header named");
    assert.equal(await found.text(), created.text);
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey });
    assert.equal((await sdk.findByIdempotencyKey(key)).state, "complete", "the SDK sends the key in that form");

    const bare = uniqueKey("bare");
    const plain = await postCharge({ apiKey, key: `"${bare}"`, body: chargeBody() });
    assert.equal((await getOperation(bare)).status, 201, "and the bare form");
    assert.equal((await getOperation(`"${bare}"`)).status, 201);
    assert.equal(plain.status, 201);

    // What the header refuses, the query refuses with the same answer.
    for (const invalid of ['"unbalanced', "k1, k2", '"k1", "k2"', '"\\x"', "x".repeat(65)]) {
      const header = await postCharge({ apiKey, key: invalid, body: chargeBody() });
      const query = await getOperation(invalid);
      assert.equal(header.status, 400, invalid);
      assert.equal(query.status, 400, invalid);
      assert.deepEqual(await query.json(), header.json, invalid);
    }
  });

  test("the SDK settles an operation whose deadline ran out, and waits with Prefer by default", async () => {
    const charges = new ChargesClient({ baseUrl: APP_URL, apiKey, attemptTimeoutMs: 500, deadlineMs: 1_000 });
    const key = uniqueKey("sdk-settle");
    const body = chargeBody({ card_token: "tok_slow_2500" });
    await assert.rejects(charges.createCharge(body, { idempotencyKey: key }), { name: "ChargeDeadlineError" });
    const during = await charges.findByIdempotencyKey(key);
    assert.equal(during.state, "in_progress");
    await new Promise((r) => setTimeout(r, 2_500));
    const after = await charges.findByIdempotencyKey(key);
    assert.equal(after.state, "complete");
    assert.ok(after.state === "complete" && after.result.ok && after.result.replayed);
    assert.equal((await charges.findByIdempotencyKey(uniqueKey("unknown"))).state, "unknown");

    // With a longer attempt timeout the SDK asks to wait, and one retry gets the answer.
    const patient = new ChargesClient({ baseUrl: APP_URL, apiKey, attemptTimeoutMs: 6_000, deadlineMs: 20_000 });
    const slowKey = uniqueKey("sdk-wait");
    const slow = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key: slowKey, body: slow });
    await new Promise((r) => setTimeout(r, 300));
    const result = await patient.createCharge(slow, { idempotencyKey: slowKey });
    assert.ok(result.ok && result.replayed);
    assert.equal(result.attempts, 1, "no 409 round trips: the server waited");
    await first;
  });
});
