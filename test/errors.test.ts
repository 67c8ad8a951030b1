import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CHARGES_ROUTE, submitCharge } from "~/server/charges/submitCharge";
import { isDatabaseUnavailable } from "~/server/db/errors";
import { slotsBetween, type PoolSlot } from "~/server/db/poolUsage";
import { keyToBytes, runIdempotent } from "~/server/idempotency";
import {
  APP_URL, chargeBody, closeConnections, db, gatewayCharges, localCharges, newApiClient, postCharge, recordOf, recordsWithKey,
  uniqueKey,
} from "./helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("errors")));
after(closeConnections);

function assertError(res: { status: number; json: any; text: string }, status: number, code: string) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.json?.error?.code, code, res.text);
  assert.equal(typeof res.json.error.message, "string");
}

const storedRecords = recordsWithKey;
const reusesOf = (key: string) => db.keyReuseAttempt.findMany({ where: { idempotencyKey: keyToBytes(key) } });

describe("authentication", () => {
  test("no Authorization header -> 401", async () => {
    assertError(await postCharge({ key: uniqueKey() }), 401, "unauthorized");
  });
  test("unknown API key -> 401, nothing stored", async () => {
    const key = uniqueKey();
    assertError(await postCharge({ apiKey: "sk_test_not_a_real_key", key }), 401, "unauthorized");
    assert.equal(await storedRecords(key), 0);
  });
});

describe("a client that hung up before its key was claimed", () => {
  test("is not worked on: nothing stored, nothing charged; the same call with the client still there charges", async () => {
    const gone = { key: uniqueKey("gone"), body: chargeBody() };
    const outcome = await submitCharge({ apiClientId: clientId, body: gone.body, idempotencyKeyHeader: gone.key, signal: AbortSignal.abort() });
    assert.equal(outcome.kind, "client_gone");
    assert.equal(await storedRecords(gone.key), 0);
    assert.equal((await gatewayCharges(gone.body.customer_id)).length, 0);

    const present = { key: uniqueKey("present"), body: chargeBody() };
    const answered = await submitCharge({ apiClientId: clientId, body: present.body, idempotencyKeyHeader: present.key, signal: new AbortController().signal });
    assert.equal(answered.kind === "response" && answered.response.status, 201);
    assert.equal(await storedRecords(present.key), 1);
  });
});

describe("request validation happens before any key is claimed", () => {
  test("invalid fields -> 400 invalid_request with field messages, nothing stored", async () => {
    const key = uniqueKey();
    const res = await postCharge({ apiKey, key, body: { amount_cents: -5, currency: "dollars", card_token: "visa", extra: 1 } });
    assertError(res, 400, "invalid_request");
    assert.deepEqual(Object.keys(res.json.error.fields).sort(), ["amount_cents", "card_token", "currency", "extra"]);
    assert.equal(await storedRecords(key), 0);
    // The key is still free: a corrected request with it succeeds.
    assert.equal((await postCharge({ apiKey, key })).status, 201);
  });
  test("missing fields are named", async () => {
    const res = await postCharge({ apiKey, key: uniqueKey(), body: {} });
    assertError(res, 400, "invalid_request");
    assert.ok(res.json.error.fields.amount_cents && res.json.error.fields.currency && res.json.error.fields.card_token);
  });
  test("malformed JSON -> 400 invalid_json", async () => {
    assertError(await postCharge({ apiKey, key: uniqueKey(), rawBody: '{"amount_cents": 10,' }), 400, "invalid_json");
  });
  test("a JSON array or string is not a charge -> 400 invalid_request", async () => {
    assertError(await postCharge({ apiKey, key: uniqueKey(), rawBody: "[1,2]" }), 400, "invalid_request");
    assertError(await postCharge({ apiKey, key: uniqueKey(), rawBody: '"hello"' }), 400, "invalid_request");
  });
  test("non-UTF-8 body -> 400 invalid_json", async () => {
    const bytes = Buffer.concat([Buffer.from('{"currency":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    assertError(await postCharge({ apiKey, key: uniqueKey(), rawBody: bytes }), 400, "invalid_json");
  });
  test("body over the limit -> 413 body_too_large, nothing stored", async () => {
    const key = uniqueKey();
    const huge = JSON.stringify({ ...chargeBody(), padding: "x".repeat(100_000) });
    assertError(await postCharge({ apiKey, key, rawBody: huge }), 413, "body_too_large");
    assert.equal(await storedRecords(key), 0);
  });
  test("wrong Content-Type -> 415", async () => {
    assertError(
      await postCharge({ apiKey, key: uniqueKey(), rawBody: "amount=1", headers: { "Content-Type": "application/x-www-form-urlencoded" } }),
      415,
      "unsupported_media_type",
    );
  });
});

describe("Idempotency-Key header", () => {
  test("65 characters -> 400 invalid_idempotency_key", async () => {
    assertError(await postCharge({ apiKey, key: "k".repeat(65) }), 400, "invalid_idempotency_key");
  });
  test("64 characters is accepted", async () => {
    assert.equal((await postCharge({ apiKey, key: `${Date.now()}`.padEnd(64, "k") })).status, 201);
  });
  test("empty -> 400 invalid_idempotency_key", async () => {
    assertError(await postCharge({ apiKey, key: '""' }), 400, "invalid_idempotency_key");
  });
  test("the structured-field form \"key\" is the same key as key", async () => {
    const key = uniqueKey();
    const body = chargeBody();
    const first = await postCharge({ apiKey, key: `"${key}"`, body });
    const second = await postCharge({ apiKey, key, body });
    assert.equal(first.status, 201);
    assert.equal(second.headers.get("idempotent-replay"), "true");
  });
  test("keys are case-sensitive", async () => {
    const key = uniqueKey("CaseKey");
    const body = chargeBody();
    assert.equal((await postCharge({ apiKey, key, body })).status, 201);
    const other = await postCharge({ apiKey, key: key.toLowerCase(), body });
    assert.equal(other.status, 201);
    assert.equal(other.headers.get("idempotent-replay"), null);
  });
});

describe("replays and reuse", () => {
  test("sequential retry after completion -> same body and Idempotent-Replay: true", async () => {
    const key = uniqueKey();
    const body = chargeBody();
    const first = await postCharge({ apiKey, key, body });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get("idempotent-replay"), null);
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal(retry.text, first.text);
  });

  test("reordered JSON keys are the same request -> replay", async () => {
    const key = uniqueKey();
    const body = chargeBody();
    const first = await postCharge({ apiKey, key, body });
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const retry = await postCharge({ apiKey, key, rawBody: JSON.stringify(reordered, null, 2) });
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal(retry.text, first.text);
  });

  test("same key, changed amount -> 422 idempotency_key_reused, recorded, no second charge", async () => {
    const key = uniqueKey();
    const body = chargeBody();
    await postCharge({ apiKey, key, body });
    const res = await postCharge({ apiKey, key, body: { ...body, amount_cents: body.amount_cents + 1 } });
    assertError(res, 422, "idempotency_key_reused");
    const attempts = await reusesOf(key);
    assert.equal(attempts.length, 1);
    assert.notEqual(attempts[0]!.storedHash, attempts[0]!.attemptedHash);
    assert.equal((await localCharges(body.customer_id)).length, 1);
  });

  test("another client's key never reveals its response -> 422", async () => {
    const other = await newApiClient("other");
    const key = uniqueKey();
    const body = chargeBody();
    const mine = await postCharge({ apiKey, key, body });
    const theirs = await postCharge({ apiKey: other.apiKey, key, body });
    assertError(theirs, 422, "idempotency_key_reused");
    assert.ok(!theirs.text.includes(mine.json.id), "the other client's charge id does not leak");
    const [attempt] = await reusesOf(key);
    assert.ok(attempt);
    assert.equal(attempt.apiClientId, other.id);
    assert.equal(attempt.ownerApiClientId, clientId);
  });

  test("the same key on another route is a different record", async () => {
    const key = uniqueKey();
    await postCharge({ apiKey, key });
    const claim = { idempotencyKey: key, apiClientId: clientId, requestHash: "0".repeat(64) };
    const done = async () => ({ kind: "complete" as const, response: { status: 200, body: "{}" }, writes: [] });
    const elsewhere = await runIdempotent({ ...claim, route: "POST /api/refunds" }, done);
    assert.equal(elsewhere.kind, "fresh");
    const onCharges = await runIdempotent({ ...claim, route: CHARGES_ROUTE }, done);
    assert.equal(onCharges.kind, "key_reused");
  });

  test("GET is not wrapped: an Idempotency-Key on it changes nothing", async () => {
    const created = await postCharge({ apiKey, key: uniqueKey() });
    const res = await fetch(`${APP_URL}/api/charges/${created.json.id}`, {
      headers: { Authorization: `Bearer ${apiKey}`, "Idempotency-Key": "get-key" },
    });
    assert.equal(res.status, 200);
    assert.equal(await recordsWithKey("get-key"), 0);
  });

  test("a request still running -> 409 request_in_progress with Retry-After", async () => {
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    const second = await postCharge({ apiKey, key, body });
    assertError(second, 409, "request_in_progress");
    assert.equal(second.headers.get("retry-after"), "2");
    assert.equal((await first).status, 201);
  });

  test("while the first request runs, a changed payload or another client is still 422, not 409", async () => {
    // This process answers retries of its own in-flight claims from memory;
    // that must never hide a reuse.
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    assertError(await postCharge({ apiKey, key, body }), 409, "request_in_progress");
    assertError(await postCharge({ apiKey, key, body: { ...body, amount_cents: 1 } }), 422, "idempotency_key_reused");
    const other = await newApiClient("other-in-flight");
    assertError(await postCharge({ apiKey: other.apiKey, key, body }), 422, "idempotency_key_reused");
    assert.equal((await reusesOf(key)).length, 2, "both reuses recorded");
    assert.equal((await first).status, 201);
    const replay = await postCharge({ apiKey, key, body });
    assert.equal(replay.headers.get("idempotent-replay"), "true", "once finished, the key is answered with the stored response");
    assert.equal((await gatewayCharges(body.customer_id)).length, 1);
  });

  test("retries of a request this process is running, or has just finished, cost no database round trip", async () => {
    /** Connections the app handed out since `since` (its own per-100 ms record). */
    const connectionsSince = async (since: number): Promise<number> => {
      const health = await (await fetch(`${APP_URL}/api/health`)).json();
      return slotsBetween((health as { pool: { recent: PoolSlot[] } }).pool.recent, since).reduce((n, slot) => n + slot.acquired, 0);
    };
    // Through the database each retry takes two (the failed INSERT and the
    // read); from memory none, leaving the health check and background count
    // flushes, so the number of retries separates the two cleanly.
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    const retries = 10;
    const inFlight = Date.now();
    for (let i = 0; i < retries; i++) assertError(await postCharge({ apiKey, key, body }), 409, "request_in_progress");
    const duringFlight = await connectionsSince(inFlight);
    assert.ok(duringFlight < retries, `${duringFlight} connections for ${retries} retries in flight`);

    const charged = await first;
    assert.equal(charged.status, 201);
    const finished = Date.now();
    for (let i = 0; i < retries; i++) {
      const replay = await postCharge({ apiKey, key, body });
      assert.equal(replay.headers.get("idempotent-replay"), "true");
      assert.equal(replay.text, charged.text, "the stored bytes");
    }
    const afterFinish = await connectionsSince(finished);
    assert.ok(afterFinish < retries, `${afterFinish} connections for ${retries} replays`);
  });
});

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

describe("reading charges", () => {
  test("GET /api/charges/:id for its owner; 404 for anyone else", async () => {
    const created = await postCharge({ apiKey, key: uniqueKey() });
    const mine = await fetch(`${APP_URL}/api/charges/${created.json.id}`, { headers: { Authorization: `Bearer ${apiKey}` } });
    assert.equal(mine.status, 200);
    assert.deepEqual(await mine.json(), created.json);
    const other = await newApiClient("reader");
    const theirs = await fetch(`${APP_URL}/api/charges/${created.json.id}`, { headers: { Authorization: `Bearer ${other.apiKey}` } });
    assertError({ status: theirs.status, json: await theirs.json(), text: "" }, 404, "not_found");
  });
  test("unknown paths and methods answer in the error format", async () => {
    const res = await fetch(`${APP_URL}/api/nothing-here`);
    assertError({ status: res.status, json: await res.json(), text: "" }, 404, "not_found");
    const put = await fetch(`${APP_URL}/api/charges`, { method: "PUT" });
    assertError({ status: put.status, json: await put.json(), text: "" }, 405, "method_not_allowed");
  });
  test("GET /api/health checks the database and reports the pool's recent use", async () => {
    const res = await fetch(`${APP_URL}/api/health`);
    assert.equal(res.status, 200);
    const health = await res.json();
    assert.equal(health.database, "ok");
    // Its own SELECT 1 took a connection in the current 100 ms slot.
    const slot = health.pool.recent.at(-1);
    assert.ok(slot.at <= Date.now() && slot.at > Date.now() - 30_000);
    assert.ok(slot.acquired >= 1 && slot.maxActive >= 1 && slot.maxActive <= health.pool.limit);
    assert.ok(slot.heldMs >= 0);
  });
});

describe("database failures are told apart from bugs", () => {
  test("a socket closed mid-query (as the text protocol reports it) is 'unavailable', a constraint error is not", () => {
    // The shape seen when MariaDB was killed under load: P2039 wrapping the driver's message.
    const closed = { code: "P2039", meta: { driverAdapterError: { message: "socket has unexpectedly been closed" } } };
    assert.equal(isDatabaseUnavailable(closed), true);
    assert.equal(isDatabaseUnavailable({ code: "P2002", message: "Unique constraint failed" }), false);
  });
});

describe("SQL metacharacters", () => {
  const nasty = `'; DROP TABLE charges; -- " \\ %_`;
  test("in any body field: a clear 400, nothing stored", async () => {
    for (const field of ["amount_cents", "currency", "card_token", "customer_id"]) {
      const key = uniqueKey("sql");
      const res = await postCharge({ apiKey, key, body: chargeBody({ [field]: nasty }) });
      assertError(res, 400, "invalid_request");
      assert.ok(res.json.error.fields[field], `${field} is named`);
      assert.equal(await storedRecords(key), 0);
    }
    assert.equal((await postCharge({ apiKey, key: uniqueKey(), body: { ...chargeBody(), [nasty]: 1 } })).status, 400);
  });
  test("in the key: a valid key, stored verbatim and replayed; the tables are intact", async () => {
    const key = `${nasty} ${Date.now()}`;
    const body = chargeBody();
    const first = await postCharge({ apiKey, key, body });
    assert.equal(first.status, 201);
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal((await recordOf(key))?.idempotencyKey, key);
    assert.ok((await db.charge.count()) > 0);
  });
});
