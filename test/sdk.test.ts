/**
 * The SDK's retry loop against the real app, where the network misbehaves in
 * ways a plain timeout test does not reach.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  ChargeDeadlineError,
  ChargesApiError,
  ChargesClient,
  InvalidIdempotencyKeyError,
  MemoryOperationStore,
  OperationDeadlineError,
  OperationExpiredError,
  RefundDeadlineError,
} from "@charges/client";
import { keyToBytes } from "~/server/idempotency/reading";
import { FileOperationStore } from "@charges/client/fileOperationStore";
import { faultyProxy, type ProxiedRequest } from "./faultyProxy";
import {
  APP_URL,
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
  seedRecord,
  startAppInstance,
  sweepUntil,
} from "./helpers";

let apiKey: string;
let clientId: number;
let storeDir: string;
before(async () => {
  ({ apiKey, id: clientId } = await newApiClient("sdk"));
  storeDir = await mkdtemp(path.join(tmpdir(), "sdk-store-"));
  // A fresh server's first requests to a route are slow (it loads the route's code): the tests below count
  // attempts of 1 s, which must not be spent on that when this file runs first.
  await postCharge({ apiKey, key: randomUUID() });
  await postRefund({ apiKey, key: randomUUID(), body: { charge: await newCharge(apiKey) } });
});
after(async () => {
  await rm(storeDir, { recursive: true, force: true });
  await closeConnections();
});

/** The real fetch, counting calls and the Idempotency-Key field values sent. */
function countingFetch() {
  const keys: string[] = [];
  const fetchFn: typeof fetch = (input, init) => {
    keys.push(new Headers(init?.headers).get("Idempotency-Key") ?? "");
    return fetch(input, init);
  };
  return { fetch: fetchFn, keys };
}

describe("SDK", () => {
  test("an answer whose body never arrives is retried with the same key and replayed", {
    timeout: 15_000,
  }, async () => {
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
    const sdk = new ChargesClient({
      baseUrl: APP_URL,
      apiKey,
      attemptTimeoutMs: 1_000,
      baseDelayMs: 50,
      deadlineMs: 10_000,
      fetch: stallingFetch,
    });
    const body = chargeBody();

    const result = await sdk.createCharge(body);

    assert.equal(result.ok, true);
    assert.equal(result.status, 201);
    assert.equal(result.replayed, true, "the second attempt gets the stored answer");
    assert.equal(result.attempts, 2);
    assert.equal(new Set(keys).size, 1, "both attempts carry the same Idempotency-Key");
    assert.equal((await gatewayCharges(body.customer_id)).length, 1);
  });

  test("sends the key as the draft's sf-string; the server stores the bare key, and a bare retry replays", async () => {
    const { fetch: fetchFn, keys } = countingFetch();
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey, fetch: fetchFn });
    const key = randomUUID();
    const body = chargeBody();
    const result = await sdk.createCharge(body, { idempotencyKey: key });
    assert.equal(result.status, 201);
    assert.deepEqual(keys, [`"${key}"`]);
    assert.equal((await recordOf(key))?.idempotencyKey, key);
    const bare = await postCharge({ apiKey, key, body });
    assert.equal(bare.headers.get("idempotent-replayed"), "true");
    assert.equal(bare.json.id, result.ok && result.charge.id);
  });

  test("an invalid key fails fast: nothing reaches the server", async () => {
    const { fetch: fetchFn, keys } = countingFetch();
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey, fetch: fetchFn });
    await assert.rejects(
      sdk.createCharge(chargeBody(), { idempotencyKey: "k".repeat(65) }),
      InvalidIdempotencyKeyError,
    );
    assert.equal(keys.length, 0);
  });

  test("503 gateway_unavailable is retried with the same key after Retry-After, up to the deadline", {
    timeout: 15_000,
  }, async () => {
    const { fetch: fetchFn, keys } = countingFetch();
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey, baseDelayMs: 10, deadlineMs: 3_000, fetch: fetchFn });
    const started = Date.now();
    const failure = await sdk.createCharge(chargeBody({ card_token: "tok_error" })).catch((e) => e);
    assert.ok(failure instanceof ChargeDeadlineError, String(failure));
    assert.equal(failure.lastProblem, "503 gateway_unavailable");
    assert.equal(keys.length, 2, "Retry-After: 2 leaves room for one retry in 3 s");
    assert.equal(new Set(keys).size, 1);
    assert.ok(Date.now() - started >= 2_000, "the retry waited for Retry-After");
    assert.match(failure.message, /findByIdempotencyKey/);
  });

  test("a file-backed store: the process 'crashes' after the charge went through; the restarted one resumes it", {
    timeout: 20_000,
  }, async () => {
    const file = path.join(storeDir, "operations.json");
    const body = chargeBody();
    const reference = `order-${randomUUID()}`;
    // The first process reaches the server once, then loses every answer: the charge happened, the
    // process never learned it, and it dies at its deadline.
    let reached = 0;
    const losingFetch: typeof fetch = async (input, init) => {
      if (reached++ === 0) await (await fetch(input, init)).text();
      throw new TypeError("fetch failed");
    };
    const first = new ChargesClient({
      baseUrl: APP_URL,
      apiKey,
      baseDelayMs: 10,
      deadlineMs: 500,
      fetch: losingFetch,
      store: new FileOperationStore(file),
    });
    await assert.rejects(first.createCharge(body, { reference }), ChargeDeadlineError);
    assert.equal((await localCharges(body.customer_id)).length, 1, "the first attempt charged");

    const restarted = new ChargesClient({ baseUrl: APP_URL, apiKey, store: new FileOperationStore(file) });
    const pending = await restarted.pendingOperations();
    assert.deepEqual(
      pending.map((op) => op.reference),
      [reference],
    );
    const result = await restarted.resume(reference);
    assert.equal(result.status, 201);
    assert.equal(result.replayed, true, "the server answered with the charge the lost attempt made");
    assert.equal(result.idempotencyKey, pending[0]!.idempotencyKey);
    assert.equal((await gatewayCharges(body.customer_id)).length, 1, "charged once");
    assert.deepEqual(await restarted.pendingOperations(), []);
  });
  const slow = { timeout: 20_000 };

  test("a replayed 500 request_abandoned is final: one attempt, marked replayed, never sent again", slow, async () => {
    // What a process that died before reaching the gateway leaves behind; the sweeper finds no charge and
    // stores 500 request_abandoned, the answer every retry with this key gets from then on.
    const body = chargeBody();
    const record = await seedRecord({ apiClientId: clientId, phase: "lease_expired", body });
    const key = record.idempotencyKey!;
    await sweepUntil("the record to be written off", async () => {
      const done = await recordOf(key);
      return done?.phase.name === "complete" && done.phase.finishedBy === "abandoned";
    });

    const { fetch: fetchFn, keys } = countingFetch();
    // A short deadline: an SDK that retried the replay would end in ChargeDeadlineError here.
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey, baseDelayMs: 10, deadlineMs: 3_000, fetch: fetchFn });
    const result = await sdk.createCharge(body, { idempotencyKey: key });

    assert.equal(result.status, 500);
    assert.equal(!result.ok && result.error.code, "request_abandoned");
    assert.equal(result.replayed, true);
    assert.equal(result.attempts, 1);
    assert.equal(keys.length, 1, "one request reached the server");
    assert.equal((await gatewayCharges(body.customer_id)).length, 0, "nothing was charged");
    assert.equal((await localCharges(body.customer_id)).length, 0);
  });

  /** Each canned answer's Retry-After date was waited for: the next attempt reached the proxy no earlier. */
  function assertRetryAfterHonoured(requests: ProxiedRequest[]) {
    for (const [i, answer] of requests.entries()) {
      const next = requests[i + 1];
      if (answer.retryAfterUntil === undefined || !next) continue;
      const early = answer.retryAfterUntil - next.at;
      assert.ok(early <= 20, `attempt ${i + 2} came ${early} ms before the Retry-After date of ${answer.answered}`);
    }
  }

  test("a proxy's 502 and 504 are retried, same key, after an HTTP-date Retry-After; one charge", slow, async () => {
    const proxy = await faultyProxy(APP_URL, [
      // A load balancer that found no app to send the request to: it never reached the app.
      { status: 502, headers: { "Content-Type": "text/html" }, body: "<h1>Bad Gateway</h1>", retryAfterDateMs: 1_000 },
      // A timeout in front of the app after it had charged: the client never learned of the charge.
      { status: 504, afterForwarding: true, retryAfterDateMs: 1_000 },
    ]);
    try {
      // Backoff of a few ms: the waits seen are Retry-After's.
      const sdk = new ChargesClient({ baseUrl: proxy.url, apiKey, baseDelayMs: 10, maxDelayMs: 20, deadlineMs: 15e3 });
      const body = chargeBody();
      const result = await sdk.createCharge(body);

      assert.equal(result.status, 201);
      assert.equal(result.attempts, 3);
      assert.equal(result.replayed, true, "the third attempt gets the charge the second one made");
      assert.deepEqual(
        proxy.requests.map((r) => r.answered),
        [502, 504, "app"],
      );
      assert.equal(new Set(proxy.requests.map((r) => r.idempotencyKey)).size, 1, "every attempt carries the same key");
      assertRetryAfterHonoured(proxy.requests);
      assert.equal((await localCharges(body.customer_id)).length, 1, "charged once");
      assert.equal((await gatewayCharges(body.customer_id)).length, 1);
    } finally {
      await proxy.close();
    }
  });

  test("a non-replayed 500 is retried, same key, after an HTTP-date Retry-After; one charge", slow, async () => {
    const internalError = JSON.stringify({ error: { code: "internal_error", message: "An internal error occurred." } });
    const proxy = await faultyProxy(APP_URL, [
      { status: 500, headers: { "Content-Type": "application/json" }, body: internalError, retryAfterDateMs: 1_000 },
    ]);
    try {
      const sdk = new ChargesClient({ baseUrl: proxy.url, apiKey, baseDelayMs: 10, maxDelayMs: 20, deadlineMs: 15e3 });
      const body = chargeBody();
      const result = await sdk.createCharge(body);

      assert.equal(result.status, 201);
      assert.equal(result.attempts, 2);
      assert.equal(result.replayed, false);
      assert.deepEqual(
        proxy.requests.map((r) => r.answered),
        [500, "app"],
      );
      assert.equal(new Set(proxy.requests.map((r) => r.idempotencyKey)).size, 1);
      assertRetryAfterHonoured(proxy.requests);
      assert.equal((await localCharges(body.customer_id)).length, 1, "charged once");
      assert.equal((await gatewayCharges(body.customer_id)).length, 1);
    } finally {
      await proxy.close();
    }
  });
});

describe("SDK refunds", () => {
  const slow = { timeout: 20_000 };
  /** The refunds of a charge in the app and at the gateway: what really moved back. */
  const refundsOf = async (charge: string) => ({
    app: (await db.refund.findMany({ where: { chargeId: charge } })).length,
    gateway: (await gatewayRefunds(charge)).length,
  });

  test(
    "an attempt that times out while the gateway refunds: retried with the same key, refunded once",
    slow,
    async () => {
      const charge = await newCharge(apiKey, { amount_cents: 1000, card_token: "tok_refund_slow_1500" });
      const { fetch: fetchFn, keys } = countingFetch();
      // Each attempt gives up after 1 s, before the gateway's refund (1.5 s) comes back.
      const sdk = new ChargesClient({
        baseUrl: APP_URL,
        apiKey,
        attemptTimeoutMs: 1_000,
        baseDelayMs: 50,
        fetch: fetchFn,
      });
      const result = await sdk.refunds.create({ charge, amount_cents: 400, reason: "duplicate" });

      assert.ok(result.ok, JSON.stringify(result));
      assert.equal(result.status, 201);
      assert.deepEqual(
        [result.refund.charge, result.refund.amount_cents, result.refund.reason],
        [charge, 400, "duplicate"],
      );
      assert.equal(result.replayed, true, "a later attempt got the refund the first one made");
      assert.ok(result.attempts >= 2, `attempts: ${result.attempts}`);
      assert.equal(new Set(keys).size, 1, "every attempt carries the same Idempotency-Key");
      assert.deepEqual(await refundsOf(charge), { app: 1, gateway: 1 }, "refunded once");
      const shown = await sdk.refunds.findByIdempotencyKey(result.idempotencyKey);
      assert.deepEqual(shown.state === "complete" && shown.result.ok && shown.result.refund, result.refund);
    },
  );

  test(
    "the gateway refunds then fails: 503, retried after Retry-After with the same key; one refund",
    slow,
    async () => {
      const charge = await newCharge(apiKey, { amount_cents: 700, card_token: "tok_refund_then_error" });
      const { fetch: fetchFn, keys } = countingFetch();
      const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey, baseDelayMs: 10, deadlineMs: 15_000, fetch: fetchFn });
      const result = await sdk.refunds.create({ charge });

      assert.ok(result.ok, JSON.stringify(result));
      assert.equal(result.refund.amount_cents, 700, "no amount: what was left");
      assert.equal(result.attempts, 2);
      assert.equal(result.replayed, false, "the retry settled the refund itself (from the gateway's lookup)");
      assert.equal(new Set(keys).size, 1);
      assert.deepEqual(await refundsOf(charge), { app: 1, gateway: 1 });
    },
  );

  test("a replay of a finished refund is flagged; the same key on charges is another operation", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 900 });
    const key = randomUUID();
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey });
    const first = await sdk.refunds.create({ charge, amount_cents: 300 }, { idempotencyKey: key });
    const again = await sdk.refunds.create({ charge, amount_cents: 300 }, { idempotencyKey: key });
    assert.deepEqual([first.status, first.replayed, again.status, again.replayed], [201, false, 201, true]);
    assert.deepEqual(again.ok && again.refund, first.ok && first.refund);
    assert.match(String(first.requestId), /^req_[0-9a-f]{20}$/, "result.requestId: the answer's Request-Id");
    assert.equal(first.originalRequestId, null);
    assert.equal(again.originalRequestId, first.requestId, "a replay names the request it replays");
    assert.notEqual(again.requestId, first.requestId);
    const bare = await postRefund({ apiKey, key, body: { charge, amount_cents: 300 } });
    assert.equal(bare.headers.get("idempotent-replayed"), "true");

    const charged = await sdk.createCharge(chargeBody(), { idempotencyKey: key });
    assert.deepEqual([charged.status, charged.replayed], [201, false], "the key's scope is its route");
    assert.deepEqual(await refundsOf(charge), { app: 1, gateway: 1 });
  });

  test("retrieve: your charge and refund by id; another client's is a 404 ChargesApiError", async () => {
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey });
    const charge = await newCharge(apiKey, { amount_cents: 900 });
    const refund = await sdk.refunds.create({ charge, amount_cents: 300 });
    assert.ok(refund.ok);
    assert.deepEqual(await sdk.refunds.retrieve(refund.refund.id), refund.refund);
    const retrieved = await sdk.charges.retrieve(charge);
    assert.deepEqual(
      [retrieved.id, retrieved.amount_refunded_cents, retrieved.refunds],
      [charge, 300, [refund.refund]],
    );
    const stranger = new ChargesClient({ baseUrl: APP_URL, apiKey: (await newApiClient("sdk stranger")).apiKey });
    await assert.rejects(
      stranger.charges.retrieve(charge),
      (error) => error instanceof ChargesApiError && error.status === 404 && error.error.code === "not_found",
    );
  });

  test("refusals come back as typed results at once, nothing refunded; 503 runs into a RefundDeadlineError", {
    timeout: 15_000,
  }, async () => {
    const sdk = new ChargesClient({ baseUrl: APP_URL, apiKey });
    const charge = await newCharge(apiKey, { amount_cents: 500 });
    const declined = await postCharge({ apiKey, body: chargeBody({ card_token: "tok_declined" }) });
    const cases = [
      [{ charge: "ch_000000000000000000000000" }, 404, "not_found"],
      [{ charge: declined.json.error.charge }, 400, "charge_not_refundable"],
      [{ charge, amount_cents: 501 }, 400, "invalid_request"],
    ] as const;
    for (const [params, status, code] of cases) {
      const result = await sdk.refunds.create(params);
      assert.deepEqual([result.ok, result.status, result.attempts], [false, status, 1], code);
      assert.equal(!result.ok && result.error.code, code);
    }
    const over = await sdk.refunds.create({ charge, amount_cents: 501 });
    assert.ok(!over.ok && (over.error.fields as Record<string, unknown>).amount_cents, "the field is named");
    assert.ok((await sdk.refunds.create({ charge })).ok);
    const nothingLeft = await sdk.refunds.create({ charge });
    assert.equal(!nothingLeft.ok && nothingLeft.error.code, "charge_already_refunded");
    assert.deepEqual(await refundsOf(charge), { app: 1, gateway: 1 });

    const failing = await newCharge(apiKey, { card_token: "tok_refund_error" });
    const impatient = new ChargesClient({ baseUrl: APP_URL, apiKey, baseDelayMs: 10, deadlineMs: 3_000 });
    const failure = await impatient.refunds.create({ charge: failing }).catch((e) => e);
    assert.ok(failure instanceof RefundDeadlineError && failure instanceof OperationDeadlineError, String(failure));
    assert.equal(failure.lastProblem, "503 gateway_unavailable");
    const state = await impatient.refunds.findByIdempotencyKey(failure.idempotencyKey);
    assert.equal(state.state, "in_progress", "released with its outcome unknown, until the sweeper settles it");
  });
});

describe("the SDK never sends an operation past its key's lifetime", () => {
  // A server that keeps keys one minute (IDEMPOTENCY_KEY_TTL_HOURS at its least), and an SDK whose clock runs
  // ahead on demand: "later" without waiting for it.
  const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 14;
  const SHORT_URL = `http://127.0.0.1:${PORT}`;
  let shortLived: Awaited<ReturnType<typeof startAppInstance>>;
  before(async () => {
    shortLived = await startAppInstance(PORT, { IDEMPOTENCY_KEY_TTL_HOURS: String(1 / 60) });
  });
  after(() => shortLived?.stop());

  /** What the server does once the key's minute is over: it forgets the key (its record expires). */
  const serverForgets = (key: string) =>
    db.idempotentRequest.updateMany({
      where: { idempotencyKey: keyToBytes(key), state: "complete" },
      data: { expiresAt: new Date(Date.now() - 1_000) },
    });

  test("a settled operation keeps the server's Idempotency-Key-Expires; past it, resume sends nothing", async () => {
    let ahead = 0;
    const { fetch: fetchFn, keys } = countingFetch();
    const store = new MemoryOperationStore();
    const options = { baseUrl: SHORT_URL, apiKey, store, fetch: fetchFn, keyExpiryMarginMs: 1_000 };
    const sdk = new ChargesClient({ ...options, now: () => Date.now() + ahead });
    const body = chargeBody();
    const made = await sdk.charges.create(body, { reference: "order-expiring" });
    assert.equal(made.status, 201);
    const expiresAt = made.keyExpiresAt!.getTime();
    assert.ok(expiresAt - Date.now() <= 61_000, "the server's minute, not the SDK's default day");
    assert.equal((await store.get("order-expiring"))?.settled?.keyExpiresAt, made.keyExpiresAt!.toISOString());

    const within = await sdk.resume("order-expiring");
    assert.equal(within.replayed, true, "within the key's lifetime a resume is a replay");
    const sent = keys.length;

    ahead = expiresAt - Date.now() + 1_000; // a little past the key's expiry
    await serverForgets(made.idempotencyKey);
    const refused = await sdk.resume("order-expiring").catch((e: unknown) => e);
    assert.ok(refused instanceof OperationExpiredError, String(refused));
    assert.equal(refused.idempotencyKey, made.idempotencyKey);
    assert.equal(refused.settled?.status, 201, "what is known of it");
    assert.equal(keys.length, sent, "nothing was sent");
    assert.equal((await gatewayCharges(body.customer_id)).length, 1, "charged once");
    const found = await sdk.charges.findByIdempotencyKey(made.idempotencyKey);
    assert.deepEqual(found.state, "expired", "not 'unknown', which would say a resend is safe");
  });

  test("an operation that never got a final answer is not sent once its key may have expired", async () => {
    let ahead = 0;
    const store = new MemoryOperationStore();
    const unreachable = new ChargesClient({
      baseUrl: "http://127.0.0.1:9", // discard: nothing answers
      apiKey,
      store,
      deadlineMs: 500,
      baseDelayMs: 10,
      now: () => Date.now() + ahead,
    });
    const body = chargeBody();
    await assert.rejects(unreachable.charges.create(body, { reference: "order-lost" }), ChargeDeadlineError);
    ahead = 24 * 3_600_000; // a day later: past the key's default lifetime, counted from the operation's start
    const { fetch: fetchFn, keys } = countingFetch();
    const later = new ChargesClient({
      baseUrl: SHORT_URL,
      apiKey,
      store,
      fetch: fetchFn,
      now: () => Date.now() + ahead,
    });
    const refused = await later.resume("order-lost").catch((e: unknown) => e);
    assert.ok(refused instanceof OperationExpiredError, String(refused));
    assert.equal(refused.settled, undefined, "no final answer is known");
    assert.equal(keys.length, 0, "nothing was sent");
    assert.equal((await gatewayCharges(body.customer_id)).length, 0);
  });
});
