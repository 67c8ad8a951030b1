/** Retries of one operation: replays of the stored answer, 409 while in flight, 422 for a reused key. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { abandonedResponse } from "~/server/charges/responses";
import { runIdempotent } from "~/server/idempotency";
import { keyToBytes } from "~/server/idempotency/reading";
import {
  APP_URL,
  assertError,
  chargeBody,
  closeConnections,
  db,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  recordsWithKey,
  seedRecord,
  scrapeMetrics,
  uniqueKey,
  waitFor,
  onlyWork,
  withMetricsCredential,
} from "./helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("replays")));
after(closeConnections);

const reusesOf = (key: string) => db.keyReuseAttempt.findMany({ where: { idempotencyKey: keyToBytes(key) } });

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
    const elsewhere = await runIdempotent({ ...claim, route: "POST /api/refunds" }, onlyWork(done));
    assert.equal(elsewhere.kind, "fresh");
    const onCharges = await runIdempotent({ ...claim, route: CHARGES_ROUTE }, onlyWork(done));
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
    assert.equal(
      replay.headers.get("idempotent-replay"),
      "true",
      "once finished, the key is answered with the stored response",
    );
    assert.equal((await gatewayCharges(body.customer_id)).length, 1);
  });

  /**
   * Claims this app took to its database so far: its claim-time histogram counts each (every result), and an answer
   * it gives from memory takes none. A count, so the machine's speed does not move it (connections handed out did:
   * a slower run of requests met more of the app's background work).
   */
  const databaseClaims = async (): Promise<number> => {
    const { text } = await scrapeMetrics(withMetricsCredential.headers.Authorization);
    const counts = text.matchAll(/^charges_idempotency_claim_seconds_count\{[^}]*\} (\d+)$/gm);
    return [...counts].reduce((n, [, count]) => n + Number(count), 0);
  };

  test("retries of a request this process is running, or has just finished, cost no database round trip", async () => {
    // Through the database each retry is a claim (the failed INSERT and the read); from memory none. The gateway
    // takes 4 s (under the test stack's 5 s timeout): long enough for the retries on a loaded machine.
    const key = uniqueKey();
    const body = chargeBody({ card_token: "tok_slow_4000" });
    const before = await databaseClaims();
    const first = postCharge({ apiKey, key, body });
    // In flight once its claim is counted, however slowly the machine ran it.
    await waitFor("the first request's claim", async () => (await databaseClaims()) > before, 30_000);
    const retries = 10;
    const inFlight = await databaseClaims();
    for (let i = 0; i < retries; i++) assertError(await postCharge({ apiKey, key, body }), 409, "request_in_progress");
    assert.equal((await databaseClaims()) - inFlight, 0, `database claims for ${retries} retries in flight`);

    const charged = await first;
    assert.equal(charged.status, 201);
    const finished = await databaseClaims();
    for (let i = 0; i < retries; i++) {
      const replay = await postCharge({ apiKey, key, body });
      assert.equal(replay.headers.get("idempotent-replay"), "true");
      assert.equal(replay.text, charged.text, "the stored bytes");
    }
    assert.equal((await databaseClaims()) - finished, 0, `database claims for ${retries} replays`);
  });

  test("an answer read from the database is remembered too: the replays after it cost no round trip", async () => {
    // Stored by someone else (here the sweeper's write-off; or another instance, or this one before a restart).
    const body = chargeBody();
    const response = abandonedResponse({ kind: "no_trace" });
    const written = { phase: "complete", finishedBy: "abandoned", response, body } as const;
    const key = (await seedRecord({ apiClientId: clientId, ...written })).idempotencyKey!;
    const first = await postCharge({ apiKey, key, body });
    assertError(first, 500, "request_abandoned");
    assert.equal(first.headers.get("idempotent-replay"), "true");
    const read = await databaseClaims();
    const retries = 10;
    for (let i = 0; i < retries; i++) {
      const replay = await postCharge({ apiKey, key, body });
      assert.equal(replay.headers.get("idempotent-replay"), "true");
      assert.equal(replay.text, first.text, "the stored bytes");
    }
    assert.equal((await databaseClaims()) - read, 0, `database claims for ${retries} replays`);
    // Remembered for exactly this request: another payload or another client still gets its 422.
    assertError(await postCharge({ apiKey, key, body: { ...body, amount_cents: 1 } }), 422, "idempotency_key_reused");
    const other = await newApiClient("other after a remembered replay");
    assertError(await postCharge({ apiKey: other.apiKey, key, body }), 422, "idempotency_key_reused");
    assert.equal((await reusesOf(key)).length, 2, "both reuses recorded");
  });
});
