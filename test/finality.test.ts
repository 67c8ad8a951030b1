/**
 * Every operation ends with a true, final answer in bounded time, whatever its client does: an operation whose
 * gateway never carries it out is answered "nothing was made" (500 request_abandoned, stored, replayed) within
 * REAP_AFTER_MS + the gateway timeout (+ the gateway's late-landing time) + 10 s of its first attempt, for a
 * client that retries POST every second, one that polls GET every 2 s, and one that settles a keyless request by
 * its request_id. Neither a retry nor a lookup postpones it (operations/finality.ts); a retry past the attempt
 * window asks the gateway instead of calling it again.
 *
 * An app instance of its own with short timings (REAP_AFTER_MS 4 s, a 1.5 s gateway timeout) and no sweeper: the
 * clients' own requests must bring the answer.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import {
  chargeBody,
  closeConnections,
  newApiClient,
  newCharge,
  postTo,
  recordOf,
  refundedOf,
  uniqueKey,
  untilFinal,
  type ApiResponse,
} from "./helpers";
import { BOUND_MS, startShortTimingsApp, TIMINGS } from "./shortTimings";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 9;
const URL = `http://127.0.0.1:${PORT}`;

let apiKey: string;
let app: Awaited<ReturnType<typeof startShortTimingsApp>>;
before(async () => {
  ({ apiKey } = await newApiClient("finality"));
  app = await startShortTimingsApp(PORT);
});
after(async () => {
  await app?.stop();
  await closeConnections();
});

/** A client's loop gives up this long after its start: a hang guard, far past the bound the answers keep. */
const GIVE_UP_MS = BOUND_MS + 30_000;

const get = async (path: string): Promise<ApiResponse> => {
  const res = await fetch(`${URL}${path}`, { headers: { Authorization: `Bearer ${apiKey}` } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) };
};

/**
 * The operation's record is complete, written off, within the bound of its first attempt (both times are the
 * database's), and no attempt reached for the gateway after the attempt window.
 */
async function assertFinalInTime(key: string | null, route: string, requestId?: string) {
  const record = key !== null ? await recordOf(key, route) : await recordById(requestId!);
  assert.ok(record && record.phase.name === "complete", "stored");
  assert.equal(record.phase.finishedBy, "abandoned");
  const tookMs = record.updatedAt.getTime() - record.createdAt.getTime();
  assert.ok(tookMs <= BOUND_MS, `final ${tookMs} ms after its first attempt; the bound is ${BOUND_MS} ms`);
  const lastCallMs = record.lastAttemptAt.getTime() - record.createdAt.getTime();
  assert.ok(lastCallMs <= TIMINGS.REAP_AFTER_MS, `an attempt reached for the gateway ${lastCallMs} ms in`);
}

async function recordById(id: string) {
  const { findById } = await import("~/server/idempotency/queries");
  return findById(BigInt(id));
}

/** Both ask for the answer (POST with the same key and body, GET by key) and get the same stored one. */
async function assertSameAnswer(path: string, key: string, body: unknown, final: ApiResponse) {
  const replay = await postTo(path, { apiKey, key, body, baseUrl: URL });
  const lookup = await get(`${path}?idempotency_key=${encodeURIComponent(key)}`);
  for (const res of [replay, lookup]) {
    assert.equal(res.status, 500, res.text);
    assert.equal(res.json.error.code, "request_abandoned");
    assert.equal(res.json.error.retryable, false);
    assert.equal(res.headers.get("idempotent-replay"), "true");
    assert.equal(res.json.error.message, final.json.error.message);
  }
}

describe("an operation whose gateway never carries it out is final in bounded time", () => {
  test("a client retrying POST every second: gateway calls within the attempt window, then the answer", async () => {
    const key = uniqueKey("retrier");
    const body = chargeBody({ card_token: "tok_error" });
    const { res, requests } = await untilFinal(() => postTo("/api/charges", { apiKey, key, body, baseUrl: URL }), {
      everyMs: 1_000,
      timeoutMs: GIVE_UP_MS,
    });
    assert.equal(res.status, 500, res.text);
    assert.equal(res.json.error.code, "request_abandoned");
    assert.ok(requests > 2, `the client kept retrying (${requests} requests)`);
    await assertFinalInTime(key, CHARGES_ROUTE);
    await assertSameAnswer("/api/charges", key, body, res);
  });

  test("a client polling GET ?idempotency_key= every 2 s: lookups never postpone the answer", async () => {
    const key = uniqueKey("poller");
    const body = chargeBody({ card_token: "tok_error" });
    const first = await postTo("/api/charges", { apiKey, key, body, baseUrl: URL });
    assert.equal(first.status, 503, first.text);
    const { res, requests } = await untilFinal(() => get(`/api/charges?idempotency_key=${key}`), {
      everyMs: 2_000,
      timeoutMs: GIVE_UP_MS,
    });
    assert.equal(res.json.error.code, "request_abandoned", res.text);
    assert.ok(requests > 1);
    await assertFinalInTime(key, CHARGES_ROUTE);
    await assertSameAnswer("/api/charges", key, body, res);
  });

  test("a keyless charge settled by its request_id, polled every 2 s", async () => {
    const first = await postTo("/api/charges", { apiKey, body: chargeBody({ card_token: "tok_error" }), baseUrl: URL });
    assert.equal(first.status, 502, first.text);
    const requestId = first.json.error.request_id as string;
    const { res } = await untilFinal(() => get(`/api/charges?request_id=${requestId}`), {
      everyMs: 2_000,
      timeoutMs: GIVE_UP_MS,
    });
    assert.equal(res.json.error.code, "request_abandoned", res.text);
    await assertFinalInTime(null, CHARGES_ROUTE, requestId);
  });

  test("a refund the gateway never makes: the same for a client retrying POST and one polling GET", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 900, card_token: "tok_refund_error" });
    const [retrierKey, pollerKey] = [uniqueKey("refund-retrier"), uniqueKey("refund-poller")];
    const bodies = { retrier: { charge, amount_cents: 400 }, poller: { charge, amount_cents: 500 } };
    const retrier = untilFinal(
      () => postTo("/api/refunds", { apiKey, key: retrierKey, body: bodies.retrier, baseUrl: URL }),
      { everyMs: 1_000, timeoutMs: GIVE_UP_MS },
    );
    const polled = await postTo("/api/refunds", { apiKey, key: pollerKey, body: bodies.poller, baseUrl: URL });
    assert.equal(polled.status, 503, polled.text);
    const poller = untilFinal(() => get(`/api/refunds?idempotency_key=${pollerKey}`), {
      everyMs: 2_000,
      timeoutMs: GIVE_UP_MS,
    });
    for (const [{ res }, key, body] of [
      [await retrier, retrierKey, bodies.retrier],
      [await poller, pollerKey, bodies.poller],
    ] as const) {
      assert.equal(res.json.error.code, "request_abandoned", res.text);
      await assertFinalInTime(key, REFUNDS_ROUTE);
      await assertSameAnswer("/api/refunds", key, body, res);
    }
    // Nothing refunded, nothing held: the answers are true.
    const totals = await refundedOf(charge);
    assert.deepEqual([totals.refunded, totals.held, totals.gatewayCount], [0, 0, 0]);
  });
});
