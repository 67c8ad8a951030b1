/**
 * The SDK's decisions (what to retry, how long to wait, what a settled operation
 * looks like) with a scripted fetch: no server, no database. Its behaviour
 * against the real server is in test/sdk.test.ts.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ChargeDeadlineError,
  ChargesApiError,
  ChargesClient,
  InvalidIdempotencyKeyError,
  MemoryOperationStore,
  OperationDeadlineError,
  OperationExpiredError,
  OperationMismatchError,
  RefundDeadlineError,
  type ChargesClientOptions,
} from "@charges/client";
import {
  appliedWaitSeconds,
  isRetryable,
  nextDelayMs,
  preferWaitSeconds,
  retryAfterMs,
} from "@charges/client/retryPolicy";
import { API_ERRORS, API_ERROR_CODES } from "@charges/client/errorRegistry";

type Scripted = { status: number; body?: unknown; headers?: Record<string, string> } | Error;
type Sent = { url: URL; method: string; headers: Headers; body: string | undefined; at: number };

/** A fetch that answers from a script, one entry per call, and records what was sent. */
function scriptedFetch(script: Scripted[]) {
  const sent: Sent[] = [];
  const fetch = (async (input: URL | RequestInfo, init?: RequestInit) => {
    sent.push({
      url: new URL(String(input)),
      method: init?.method ?? "GET",
      headers: new Headers(init?.headers),
      body: init?.body as string | undefined,
      at: Date.now(),
    });
    const next = script.shift();
    if (!next) throw new Error("the script ran out");
    if (next instanceof Error) throw next;
    const text = typeof next.body === "string" ? next.body : JSON.stringify(next.body ?? {});
    return new Response(text, {
      status: next.status,
      headers: { "Content-Type": "application/json", ...next.headers },
    });
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

const charge = {
  id: "ch_1",
  object: "charge",
  amount_cents: 100,
  currency: "usd",
  status: "succeeded",
  customer_id: null,
  failure_code: null,
  gateway_charge_id: "gw_1",
  amount_refunded_cents: 0,
  refunds: [],
  created_at: "2026-01-01T00:00:00.000Z",
};
const refund = {
  id: "re_1",
  object: "refund",
  charge: "ch_1",
  amount_cents: 40,
  currency: "usd",
  status: "succeeded",
  reason: "duplicate",
  gateway_refund_id: "gwr_1",
  created_at: "2026-01-01T00:00:00.000Z",
};
const refundParams = { charge: "ch_1", amount_cents: 40, reason: "duplicate" } as const;
const params = { amount_cents: 100, currency: "usd", card_token: "tok_visa" };
const error = (code: keyof typeof API_ERRORS, extra: Record<string, unknown> = {}) => ({
  error: { code, message: "m", ...extra },
});
const replay = { "Idempotent-Replay": "true", "Idempotent-Replayed": "true" };

function client(script: Scripted[], options: Partial<ChargesClientOptions> = {}) {
  const { fetch, sent } = scriptedFetch(script);
  const sdk = new ChargesClient({
    baseUrl: "http://api.test",
    apiKey: "sk_test",
    baseDelayMs: 1,
    maxDelayMs: 5,
    deadlineMs: 5_000,
    fetch,
    ...options,
  });
  return { sdk, sent };
}

describe("what the SDK retries (derived from the error registry)", () => {
  test("every registry code: retried exactly when the registry says retry, and never when replayed", () => {
    for (const code of API_ERROR_CODES) {
      const { status, action } = API_ERRORS[code];
      assert.equal(isRetryable({ status, code, replayed: false }), action === "retry", code);
      assert.equal(isRetryable({ status, code, replayed: true }), false, `${code} replayed`);
    }
  });
  test("answers without our code (a proxy's page): 500, 502, 503, 504 retried; others final", () => {
    for (const status of [500, 502, 503, 504])
      assert.equal(isRetryable({ status, code: undefined, replayed: false }), true, String(status));
    for (const status of [200, 201, 400, 404, 409, 429, 501])
      assert.equal(isRetryable({ status, code: undefined, replayed: false }), false, String(status));
  });
});

describe("Retry-After and Prefer", () => {
  test("Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-12-03T10:00:00Z");
    assert.equal(retryAfterMs("2", now), 2_000);
    assert.equal(retryAfterMs(" 0 ", now), 0);
    assert.equal(retryAfterMs("Thu, 03 Dec 2026 10:00:03 GMT", now), 3_000);
    assert.equal(retryAfterMs("Thu, 03 Dec 2026 09:59:00 GMT", now), 0, "a date in the past: now");
    assert.equal(retryAfterMs("soon", now), 0);
    assert.equal(retryAfterMs(null, now), 0);
  });
  test("Preference-Applied: wait=N is read; the wait asked for stays a second under the attempt's time", () => {
    assert.equal(appliedWaitSeconds("wait=5"), 5);
    assert.equal(appliedWaitSeconds("respond-async, wait=3"), 3);
    assert.equal(appliedWaitSeconds(null), undefined);
    assert.equal(appliedWaitSeconds("return=minimal"), undefined);
    assert.equal(preferWaitSeconds(5, 10_000), 5);
    assert.equal(preferWaitSeconds(5, 3_000), 2);
    assert.equal(preferWaitSeconds(5, 900), 0);
    assert.equal(preferWaitSeconds(0, 10_000), 0);
  });
  test("after the server waited, Retry-After alone paces the retry; otherwise backoff may add to it", () => {
    assert.equal(
      nextDelayMs({ attempt: 6, retryAfterMs: 1_000, serverWaited: true, baseMs: 250, maxMs: 5_000 }),
      1_000,
    );
    for (let i = 0; i < 50; i++) {
      const delay = nextDelayMs({ attempt: 6, retryAfterMs: 1_000, serverWaited: false, baseMs: 250, maxMs: 5_000 });
      assert.ok(delay >= 1_000 && delay <= 5_000, String(delay));
    }
  });
});

describe("createCharge with a scripted server", () => {
  test("a proxy's 502 and 504, then 201: the same key each time, in structured form, with Prefer: wait", async () => {
    const script = [
      { status: 502, body: "<html>bad gateway</html>" },
      { status: 504, body: "" },
      { status: 201, body: charge },
    ];
    const { sdk, sent } = client(script, { deadlineMs: 60_000 });
    const result = await sdk.createCharge(params);
    assert.equal(result.ok && result.charge.id, "ch_1");
    assert.equal(result.attempts, 3);
    const keys = sent.map((s) => s.headers.get("Idempotency-Key"));
    assert.equal(new Set(keys).size, 1);
    assert.match(
      keys[0]!,
      /^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$/,
      "a UUIDv4 as an sf-string",
    );
    assert.equal(result.idempotencyKey, keys[0]!.slice(1, -1));
    assert.ok(sent.every((s) => s.headers.get("Prefer") === "wait=5"));
  });

  test("500 internal_error and a network error are retried; a replayed 500 request_abandoned is final", async () => {
    const retried = client([
      { status: 500, body: error("internal_error") },
      new TypeError("fetch failed"),
      { status: 201, body: charge },
    ]);
    assert.equal((await retried.sdk.createCharge(params)).attempts, 3);

    const abandoned = client([{ status: 500, body: error("request_abandoned"), headers: replay }]);
    const result = await abandoned.sdk.createCharge(params);
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.error.code, "request_abandoned");
    assert.equal(result.replayed, true);
    assert.equal(result.attempts, 1);
  });

  test("Retry-After is honoured, as seconds and as an HTTP date", async () => {
    const inOneSecond = new Date(Date.now() + 1_000).toUTCString();
    const { sdk, sent } = client([
      { status: 409, body: error("request_in_progress"), headers: { "Retry-After": "1" } },
      { status: 503, body: error("gateway_unavailable"), headers: { "Retry-After": inOneSecond } },
      { status: 201, body: charge },
    ]);
    await sdk.createCharge(params);
    assert.ok(sent[1]!.at - sent[0]!.at >= 990, `waited ${sent[1]!.at - sent[0]!.at} ms for Retry-After: 1`);
    // An HTTP date has one-second resolution: the wait is whatever is left of that second, up to 1 s.
    assert.ok(sent[2]!.at - sent[1]!.at <= 1_100, `waited ${sent[2]!.at - sent[1]!.at} ms for the date`);
  });

  test("when the server says it waited (Preference-Applied), no backoff is added", async () => {
    const waited = { "Retry-After": "0", "Preference-Applied": "wait=5" };
    const { sdk, sent } = client(
      [
        { status: 409, body: error("request_in_progress"), headers: waited },
        { status: 201, body: charge },
      ],
      { baseDelayMs: 3_000, maxDelayMs: 3_000 },
    );
    await sdk.createCharge(params);
    assert.ok(sent[1]!.at - sent[0]!.at < 500, `retried after ${sent[1]!.at - sent[0]!.at} ms`);
  });

  test("preferWaitSeconds: 0 sends no Prefer; a short attempt asks for less", async () => {
    const off = client([{ status: 201, body: charge }], { preferWaitSeconds: 0 });
    await off.sdk.createCharge(params);
    assert.equal(off.sent[0]!.headers.get("Prefer"), null);
    const short = client([{ status: 201, body: charge }], { attemptTimeoutMs: 3_000 });
    await short.sdk.createCharge(params);
    assert.equal(short.sent[0]!.headers.get("Prefer"), "wait=2");
  });

  test("final answers are returned at once: 402, 422, 400", async () => {
    for (const code of ["card_declined", "idempotency_key_reused", "invalid_request"] as const) {
      const { sdk } = client([{ status: API_ERRORS[code].status, body: error(code) }]);
      const result = await sdk.createCharge(params);
      assert.equal(result.attempts, 1, code);
      assert.equal(!result.ok && result.error.code, code);
    }
  });

  test("an invalid key fails fast, before anything is sent", async () => {
    for (const key of ["", "k".repeat(65), "clé", "line\nbreak"]) {
      const { sdk, sent } = client([]);
      await assert.rejects(sdk.createCharge(params, { idempotencyKey: key }), InvalidIdempotencyKeyError);
      await assert.rejects(sdk.findByIdempotencyKey(key), InvalidIdempotencyKeyError);
      assert.equal(sent.length, 0);
    }
  });

  test("the deadline error names the key and explains findByIdempotencyKey", async () => {
    const { sdk } = client(
      Array.from({ length: 50 }, () => ({ status: 503, body: error("service_unavailable") })),
      { deadlineMs: 100 },
    );
    const failure = await sdk.createCharge(params, { idempotencyKey: "key-123" }).catch((e) => e);
    assert.ok(failure instanceof ChargeDeadlineError);
    assert.equal(failure.idempotencyKey, "key-123");
    assert.match(failure.message, /findByIdempotencyKey\("key-123"\)/);
    assert.match(failure.message, /never retry it with a new key/);
    assert.match(failure.message, /"complete".*"in_progress".*"unknown"/s);
  });
});

describe("findByIdempotencyKey with a scripted server", () => {
  test("complete: the same ChargeResult createCharge gives for that answer", async () => {
    const answer = { status: 201, body: charge, headers: replay };
    const found = client([answer]);
    const state = await found.sdk.findByIdempotencyKey("key/with space");
    const created = await client([answer]).sdk.createCharge(params, { idempotencyKey: "key/with space" });
    assert.deepEqual(state, { state: "complete", result: created });
    const [request] = found.sent;
    assert.equal(request!.method, "GET");
    assert.equal(request!.url.pathname, "/api/charges");
    // The header's form (the server parses the query as it parses the header), URL-encoded by URLSearchParams.
    assert.equal(request!.url.searchParams.get("idempotency_key"), '"key/with space"');
    assert.equal(request!.body, undefined);
  });

  test("a stored decline is complete too, not an error", async () => {
    const { sdk } = client([{ status: 402, body: error("card_declined", { charge: "ch_9" }), headers: replay }]);
    const state = await sdk.findByIdempotencyKey("k");
    assert.equal(state.state === "complete" && !state.result.ok && state.result.error.code, "card_declined");
  });

  test("in flight: its age and when to ask again, without retrying", async () => {
    const { sdk, sent } = client([
      { status: 409, body: error("request_in_progress", { age_seconds: 7 }), headers: { "Retry-After": "2" } },
    ]);
    assert.deepEqual(await sdk.findByIdempotencyKey("k"), {
      state: "in_progress",
      ageSeconds: 7,
      retryAfterMs: 2_000,
      idempotencyKey: "k",
    });
    assert.equal(sent.length, 1);
  });

  test("unknown: 404 not_found, after retrying a 503", async () => {
    const { sdk, sent } = client([
      { status: 503, body: error("service_unavailable") },
      { status: 404, body: error("not_found") },
    ]);
    assert.deepEqual(await sdk.findByIdempotencyKey("k"), { state: "unknown", idempotencyKey: "k" });
    assert.equal(sent.length, 2);
  });

  test("anything else is an error to fix (401, or a server without the endpoint: 405)", async () => {
    for (const code of ["unauthorized", "method_not_allowed"] as const) {
      const { sdk } = client([{ status: API_ERRORS[code].status, body: error(code) }]);
      await assert.rejects(sdk.findByIdempotencyKey("k"), ChargesApiError);
    }
  });
});

describe("a durable operation store", () => {
  test("key and body are saved before the first attempt; a restarted client continues the same operation", async () => {
    const store = new MemoryOperationStore();
    let storedAtFirstAttempt: unknown;
    const lostAnswer = (async () => {
      storedAtFirstAttempt = await store.get("order-1001");
      throw new TypeError("socket hang up");
    }) as unknown as typeof fetch;
    const crashed = new ChargesClient({
      baseUrl: "http://api.test",
      apiKey: "k",
      baseDelayMs: 1,
      deadlineMs: 50,
      store,
      fetch: lostAnswer,
    });
    await assert.rejects(crashed.createCharge(params, { reference: "order-1001" }), ChargeDeadlineError);
    const saved = storedAtFirstAttempt as { idempotencyKey: string; body: string };
    assert.equal(saved.body, JSON.stringify(params));
    assert.deepEqual(
      (await crashed.pendingOperations()).map((op) => op.reference),
      ["order-1001"],
    );

    // "After the restart": a new client on the same store.
    const restarted = client([{ status: 201, body: charge, headers: replay }], { store });
    const result = await restarted.sdk.resume("order-1001");
    assert.equal(result.idempotencyKey, saved.idempotencyKey);
    assert.equal(restarted.sent[0]!.headers.get("Idempotency-Key"), `"${saved.idempotencyKey}"`);
    assert.equal(restarted.sent[0]!.body, saved.body);
    assert.deepEqual(await restarted.sdk.pendingOperations(), []);
    assert.equal((await store.get("order-1001"))!.settled!.status, 201);

    // Asking for the same operation again reuses its key (and gets the server's replay).
    const again = client([{ status: 201, body: charge, headers: replay }], { store });
    assert.equal(
      (await again.sdk.createCharge(params, { reference: "order-1001" })).idempotencyKey,
      saved.idempotencyKey,
    );
  });

  test("another body under a stored reference is refused before anything is sent", async () => {
    const store = new MemoryOperationStore();
    await client([{ status: 201, body: charge }], { store }).sdk.createCharge(params, { reference: "r" });
    const { sdk, sent } = client([], { store });
    await assert.rejects(
      sdk.createCharge({ ...params, amount_cents: 999 }, { reference: "r" }),
      OperationMismatchError,
    );
    assert.equal(sent.length, 0);
  });

  test("a reference without a store is a programming error", async () => {
    await assert.rejects(client([]).sdk.createCharge(params, { reference: "r" }), TypeError);
  });
});

describe("refunds: the same protocol through the same loop", () => {
  test("refunds.create: POST /api/refunds, one key for every attempt, retried like a charge", async () => {
    const { sdk, sent } = client([
      new TypeError("fetch failed"),
      { status: 409, body: error("request_in_progress"), headers: { "Retry-After": "0" } },
      { status: 503, body: error("gateway_unavailable") },
      { status: 201, body: refund, headers: replay },
    ]);
    const result = await sdk.refunds.create(refundParams);
    assert.equal(result.ok && result.refund.id, "re_1");
    assert.deepEqual([result.attempts, result.replayed], [4, true]);
    assert.ok(sent.every((s) => s.method === "POST" && s.url.pathname === "/api/refunds"));
    assert.ok(sent.every((s) => s.body === JSON.stringify(refundParams)));
    assert.equal(new Set(sent.map((s) => s.headers.get("Idempotency-Key"))).size, 1);
    assert.equal(result.idempotencyKey, sent[0]!.headers.get("Idempotency-Key")!.slice(1, -1));
  });

  test("final refund answers are returned at once, typed by the registry's codes", async () => {
    const codes = ["refund_declined", "charge_already_refunded", "charge_not_refundable", "not_found"] as const;
    for (const code of codes) {
      const { sdk } = client([{ status: API_ERRORS[code].status, body: error(code) }]);
      const result = await sdk.refunds.create(refundParams);
      assert.equal(result.attempts, 1, code);
      assert.equal(!result.ok && result.error.code, code);
    }
  });

  test("the deadline: a RefundDeadlineError (an OperationDeadlineError) naming refunds' own calls", async () => {
    const { sdk } = client(
      Array.from({ length: 50 }, () => ({ status: 503, body: error("gateway_unavailable") })),
      { deadlineMs: 100 },
    );
    const failure = await sdk.refunds.create(refundParams, { idempotencyKey: "refund-123" }).catch((e) => e);
    assert.ok(failure instanceof RefundDeadlineError && failure instanceof OperationDeadlineError);
    assert.ok(!(failure instanceof ChargeDeadlineError));
    assert.equal(failure.idempotencyKey, "refund-123");
    assert.match(failure.message, /The refund may or may not have been made/);
    assert.match(failure.message, /refunds\.findByIdempotencyKey\("refund-123"\)/);
    assert.match(failure.message, /refunds\.create again with the same key/);
  });

  test("refunds.findByIdempotencyKey asks GET /api/refunds; complete is what refunds.create gives", async () => {
    const answer = { status: 201, body: refund, headers: replay };
    const found = client([answer]);
    const state = await found.sdk.refunds.findByIdempotencyKey("k");
    const created = await client([answer]).sdk.refunds.create(refundParams, { idempotencyKey: "k" });
    assert.deepEqual(state, { state: "complete", result: created });
    assert.equal(found.sent[0]!.method, "GET");
    assert.equal(found.sent[0]!.url.pathname, "/api/refunds");
    assert.equal(found.sent[0]!.url.searchParams.get("idempotency_key"), '"k"', "the header's form");
  });

  test("a stored refund is resumed as a refund; a reference names one kind of operation", async () => {
    const store = new MemoryOperationStore();
    const lost = client([new TypeError("socket hang up")], { store, deadlineMs: 20 });
    await assert.rejects(lost.sdk.refunds.create(refundParams, { reference: "order-7/refund" }), RefundDeadlineError);
    assert.equal((await store.get("order-7/refund"))!.resource, "refunds");

    const restarted = client([{ status: 201, body: refund, headers: replay }], { store });
    const result = await restarted.sdk.resume("order-7/refund");
    assert.equal(result.ok && "refund" in result && result.refund.id, "re_1");
    assert.equal(restarted.sent[0]!.url.pathname, "/api/refunds");
    assert.equal(restarted.sent[0]!.body, JSON.stringify(refundParams));

    const { sdk, sent } = client([], { store });
    await assert.rejects(sdk.charges.resume("order-7/refund"), OperationMismatchError);
    await assert.rejects(sdk.createCharge(params, { reference: "order-7/refund" }), OperationMismatchError);
    assert.equal(sent.length, 0);
  });

  test("an operation stored before refunds existed (no resource) is a charge", async () => {
    const store = new MemoryOperationStore();
    // Stored in the format of then (no resource), and still within its key's lifetime.
    const old = {
      reference: "r",
      idempotencyKey: "k",
      body: JSON.stringify(params),
      createdAt: new Date().toISOString(),
    };
    await store.saveIfAbsent(old);
    const { sdk, sent } = client([{ status: 201, body: charge, headers: replay }], { store });
    const result = await sdk.resume("r");
    assert.equal(result.ok && "charge" in result && result.charge.id, "ch_1");
    assert.equal(sent[0]!.url.pathname, "/api/charges");
    await assert.rejects(sdk.refunds.resume("r"), OperationMismatchError);
  });

  test("past its key's lifetime (from its start, or what its final answer said) nothing is sent", async () => {
    const store = new MemoryOperationStore();
    const day = 24 * 3_600_000;
    const started = new Date(Date.now() - day).toISOString();
    await store.saveIfAbsent({
      reference: "lost",
      idempotencyKey: "k1",
      body: JSON.stringify(params),
      createdAt: started,
    });
    const expiresSoon = new Date(Date.now() + 30_000).toUTCString();
    const { sdk, sent } = client([{ status: 201, body: charge, headers: { "Idempotency-Key-Expires": expiresSoon } }], {
      store,
    });
    const lost = await sdk.resume("lost").catch((e: unknown) => e);
    assert.ok(lost instanceof OperationExpiredError && lost.settled === undefined, String(lost));
    const made = await sdk.charges.create(params, { reference: "kept" });
    assert.equal((await store.get("kept"))?.settled?.keyExpiresAt, new Date(expiresSoon).toISOString());
    assert.ok(made.keyExpiresAt);
    // Within the SDK's default day, but past what the server said (less the 60 s margin): not sent again.
    await assert.rejects(sdk.resume("kept"), OperationExpiredError);
    assert.equal(sent.length, 1, "only the one create reached the server");
  });
});
