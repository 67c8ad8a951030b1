/**
 * The wire protocol against the real server: the Idempotency-Key header as the
 * draft defines it, replay markers, and the error format (doc_url, Link,
 * Retry-After, RFC 9457 problem bodies).
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { API_ERRORS, docPath } from "@charges/client/errorRegistry";
import {
  APP_URL,
  chargeBody,
  closeConnections,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  recordOf,
  recordsWithKey,
  uniqueKey,
} from "./helpers";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("protocol")));
after(closeConnections);

/** A POST with its header lines exactly as given: fetch cannot send one field twice. */
function rawPost(headers: Record<string, string | string[]>, body: unknown): Promise<{ status: number; json: any }> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${APP_URL}/api/charges`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(payload), ...headers },
    });
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(payload);
  });
}

const docUrl = (code: keyof typeof API_ERRORS) => new URL(docPath(code), APP_URL).href;

describe("Idempotency-Key as an RFC 9651 structured-field string", () => {
  test("two Idempotency-Key field lines -> 400 invalid_idempotency_key; nothing stored, nothing charged", async () => {
    const [k1, k2] = [uniqueKey("line1"), uniqueKey("line2")];
    const body = chargeBody();
    const res = await rawPost({ Authorization: `Bearer ${apiKey}`, "Idempotency-Key": [k1, k2] }, body);
    assert.equal(res.status, 400, JSON.stringify(res.json));
    assert.equal(res.json.error.code, "invalid_idempotency_key");
    assert.match(res.json.error.message, /exactly one Idempotency-Key/);
    for (const key of [k1, k2, `${k1}, ${k2}`]) assert.equal(await recordsWithKey(key), 0);
    assert.equal((await gatewayCharges(body.customer_id)).length, 0);
  });

  test("two structured field lines, a list, an unbalanced quote -> 400, nothing charged", async () => {
    const body = chargeBody();
    for (const value of [
      [`"${uniqueKey()}"`, `"${uniqueKey()}"`],
      `"${uniqueKey()}", "${uniqueKey()}"`,
      `"${uniqueKey()}`,
    ]) {
      const res = await rawPost({ Authorization: `Bearer ${apiKey}`, "Idempotency-Key": value }, body);
      assert.equal(res.status, 400, `${JSON.stringify(value)}: ${JSON.stringify(res.json)}`);
      assert.equal(res.json.error.code, "invalid_idempotency_key");
    }
    assert.equal((await localCharges(body.customer_id)).length, 0);
  });

  test('escapes are decoded: "a\\"b" is the key a"b, and the bare form a"b replays it', async () => {
    const key = `${uniqueKey()}-a"b\\c`;
    const sfString = `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
    const body = chargeBody();
    const first = await postCharge({ apiKey, key: sfString, body });
    assert.equal(first.status, 201, first.text);
    assert.equal((await recordOf(key))?.idempotencyKey, key, "stored decoded");
    const bare = await postCharge({ apiKey, key, body });
    assert.equal(bare.headers.get("idempotent-replay"), "true");
    assert.equal(bare.text, first.text);
  });
});

describe("replays", () => {
  test("carry Idempotent-Replay: true and Stripe's Idempotent-Replayed: true; first answers neither", async () => {
    const key = uniqueKey();
    const body = chargeBody();
    const first = await postCharge({ apiKey, key, body });
    assert.equal(first.headers.get("idempotent-replay"), null);
    assert.equal(first.headers.get("idempotent-replayed"), null);
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal(retry.headers.get("idempotent-replayed"), "true");
  });
});

describe("error answers", () => {
  test("every error body names its documentation in doc_url, stored ones (402) included", async () => {
    const declined = { key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) };
    const answers = {
      invalid_request: await postCharge({ apiKey, key: uniqueKey(), body: { amount_cents: 0 } }),
      invalid_json: await postCharge({ apiKey, key: uniqueKey(), rawBody: "{" }),
      unauthorized: await postCharge({ key: uniqueKey() }),
      card_declined: await postCharge({ apiKey, ...declined }),
      unsupported_media_type: await postCharge({ apiKey, rawBody: "a", headers: { "Content-Type": "text/plain" } }),
      gateway_unavailable: await postCharge({
        apiKey,
        key: uniqueKey(),
        body: chargeBody({ card_token: "tok_error" }),
      }),
    };
    for (const [code, res] of Object.entries(answers) as [
      keyof typeof API_ERRORS,
      (typeof answers)["unauthorized"],
    ][]) {
      assert.equal(res.status, API_ERRORS[code].status, res.text);
      assert.equal(res.json.error.code, code);
      assert.equal(res.json.error.doc_url, docUrl(code), res.text);
    }
    const replay = await postCharge({ apiKey, ...declined });
    assert.equal(replay.headers.get("idempotent-replay"), "true");
    assert.equal(replay.json.error.doc_url, docUrl("card_declined"));
    assert.equal(replay.text, answers.card_declined.text, "a replay answers exactly what the first request answered");

    for (const path of ["/api/nothing-here", "/api/charges/ch_missing"]) {
      const res = await fetch(`${APP_URL}${path}`, { headers: { Authorization: `Bearer ${apiKey}` } });
      assert.equal((await res.json()).error.doc_url, docUrl("not_found"));
    }
  });

  test('the idempotency errors (400, 409, 422) carry Link: <doc>; rel="describedby"; others do not', async () => {
    const link = (code: keyof typeof API_ERRORS) => `<${docUrl(code)}>; rel="describedby"; type="text/html"`;
    const invalid = await postCharge({ apiKey, key: "k".repeat(65) });
    assert.equal(invalid.headers.get("link"), link("invalid_idempotency_key"));

    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    const inFlight = await postCharge({ apiKey, key, body });
    assert.equal(inFlight.status, 409);
    assert.equal(inFlight.headers.get("link"), link("request_in_progress"));
    assert.equal(inFlight.headers.get("retry-after"), String(API_ERRORS.request_in_progress.retryAfterSeconds));
    const reused = await postCharge({ apiKey, key, body: { ...body, amount_cents: 5 } });
    assert.equal(reused.status, 422);
    assert.equal(reused.headers.get("link"), link("idempotency_key_reused"));
    assert.equal((await first).status, 201);

    assert.equal((await postCharge({ apiKey, key: uniqueKey(), body: { amount_cents: 0 } })).headers.get("link"), null);
  });

  test("Accept: application/problem+json -> an RFC 9457 problem (type, title, status, detail, code)", async () => {
    const accept = { Accept: "application/problem+json" };
    const res = await postCharge({ apiKey, key: uniqueKey(), body: { amount_cents: 0 }, headers: accept });
    assert.equal(res.status, 400);
    assert.match(res.headers.get("content-type")!, /^application\/problem\+json/);
    assert.equal(res.json.type, docUrl("invalid_request"));
    assert.equal(res.json.title, API_ERRORS.invalid_request.title);
    assert.equal(res.json.status, 400);
    assert.equal(res.json.detail, API_ERRORS.invalid_request.message);
    assert.equal(res.json.code, "invalid_request");
    assert.ok(res.json.fields.amount_cents, "details stay, as extension members");
    assert.equal(res.json.error, undefined);

    const declined = { key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) };
    await postCharge({ apiKey, ...declined });
    const replay = await postCharge({ apiKey, ...declined, headers: accept });
    assert.equal(replay.headers.get("idempotent-replay"), "true");
    assert.equal(replay.json.code, "card_declined");
    assert.equal(replay.json.status, 402);
    assert.match(replay.json.charge, /^ch_/);

    const success = await postCharge({ apiKey, key: uniqueKey(), headers: accept });
    assert.equal(success.status, 201);
    assert.match(success.headers.get("content-type")!, /^application\/json/, "successes are unchanged");
  });

  test("the default stays today's JSON, also when problem+json is offered at a lower preference", async () => {
    for (const accept of [undefined, "*/*", "application/json", "application/json, application/problem+json;q=0.5"]) {
      const res = await postCharge({
        apiKey,
        key: uniqueKey(),
        body: { amount_cents: 0 },
        headers: accept ? { Accept: accept } : {},
      });
      assert.match(res.headers.get("content-type")!, /^application\/json/, String(accept));
      assert.equal(res.json.error.code, "invalid_request");
    }
  });
});
