/**
 * The Idempotency-Key protocol, once for every money route from one table: what a client of /api/charges can rely
 * on holds for /api/refunds the same way, because both run on the same layer (src/server/operations).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { env } from "~/env";
import { staffContext } from "~/server/audit/audit";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { setClientKeyRequired } from "~/server/rollout/mode";
import {
  APP_URL,
  assertError,
  chargeBody,
  closeConnections,
  db,
  newApiClient,
  newCharge,
  postTo,
  recordOf,
  uniqueKey,
  waitFor,
} from "./helpers";

type Body = Record<string, unknown>;

/** A money route as a client uses it: a valid body (a slow one on request) and another body for the same key. */
type RouteCase = {
  route: string;
  path: string;
  /** slow: the gateway answers after 1.5 s; then_error: the money moves, then the gateway fails (500). */
  body: (apiKey: string, behaviour?: "slow" | "then_error") => Promise<Body>;
  other: (body: Body) => Body;
};

/** A charge made with these cards succeeds; its refunds misbehave so (src/gateway-sim/refundLedger.ts). */
const REFUND_CARDS = { slow: "tok_refund_slow_1500", then_error: "tok_refund_then_error" };

const ROUTES: RouteCase[] = [
  {
    route: CHARGES_ROUTE,
    path: "/api/charges",
    body: async (_apiKey, behaviour) =>
      chargeBody(behaviour ? { card_token: behaviour === "slow" ? "tok_slow_1500" : "tok_charge_then_error" } : {}),
    other: (body) => ({ ...body, amount_cents: 5 }),
  },
  {
    route: REFUNDS_ROUTE,
    path: "/api/refunds",
    body: async (apiKey, behaviour) => ({
      charge: await newCharge(apiKey, behaviour ? { card_token: REFUND_CARDS[behaviour] } : {}),
      amount_cents: 500,
    }),
    other: (body) => ({ ...body, amount_cents: 400 }),
  },
];

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("money routes")));
after(closeConnections);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const r of ROUTES) {
  const post = (key: string | undefined, body: Body, headers: Record<string, string> = {}) =>
    postTo(r.path, { apiKey, key, body, headers });

  describe(`${r.route}: the Idempotency-Key protocol`, () => {
    test("a retry replays the first answer byte for byte with both replay headers; the first has none", async () => {
      const [key, body] = [uniqueKey(), await r.body(apiKey)];
      const first = await post(key, body);
      assert.equal(first.status, 201, first.text);
      assert.equal(first.headers.get("idempotent-replay"), null);
      const retry = await post(key, body);
      assert.equal(retry.status, 201);
      assert.equal(retry.text, first.text);
      assert.equal(retry.headers.get("idempotent-replay"), "true");
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
    });

    test('both header forms name one operation: the sf-string "K" replays the bare K', async () => {
      const [key, body] = [uniqueKey(), await r.body(apiKey)];
      const first = await post(`"${key}"`, body);
      assert.equal(first.status, 201, first.text);
      assert.equal((await recordOf(key, r.route))?.idempotencyKey, key);
      const bare = await post(key, body);
      assert.equal(bare.headers.get("idempotent-replay"), "true");
      assert.equal(bare.text, first.text);
    });

    test("in flight: 409 request_in_progress with Retry-After; Prefer: wait gets the answer instead", async () => {
      const [key, body] = [uniqueKey(), await r.body(apiKey, "slow")];
      const first = post(key, body);
      await pause(300);
      const inFlight = await post(key, body);
      assertError(inFlight, 409, "request_in_progress");
      assert.ok(Number(inFlight.headers.get("retry-after")) > 0);
      const waited = await post(key, body, { Prefer: "wait=5" });
      assert.equal(waited.status, 201, waited.text);
      assert.equal(waited.headers.get("preference-applied"), "wait=5");
      assert.equal((await first).text, waited.text);
    });

    test("another body under the key: 422 idempotency_key_reused, and nothing more moves", async () => {
      const [key, body] = [uniqueKey(), await r.body(apiKey)];
      assert.equal((await post(key, body)).status, 201);
      assertError(await post(key, r.other(body)), 422, "idempotency_key_reused");
    });

    test("GET ?idempotency_key= settles it without resending: the stored answer; 404 for an unknown key", async () => {
      const [key, body] = [uniqueKey(), await r.body(apiKey)];
      const first = await post(key, body);
      const auth = { Authorization: `Bearer ${apiKey}` };
      const found = await fetch(`${APP_URL}${r.path}?idempotency_key=${encodeURIComponent(key)}`, { headers: auth });
      assert.equal(found.status, 201);
      assert.equal(await found.text(), first.text);
      assert.equal(found.headers.get("idempotent-replay"), "true");
      const missing = await fetch(`${APP_URL}${r.path}?idempotency_key=${uniqueKey()}`, { headers: auth });
      assert.equal(missing.status, 404);
    });

    test("an unknown outcome is settled by a GET at once (as a retry would), not after the sweeper", async () => {
      const [key, body] = [uniqueKey(), await r.body(apiKey, "then_error")];
      assertError(await post(key, body), 503, "gateway_unavailable");
      const auth = { Authorization: `Bearer ${apiKey}` };
      const settled = await waitFor(
        "the GET to settle the operation",
        async () => {
          const res = await fetch(`${APP_URL}${r.path}?idempotency_key=${encodeURIComponent(key)}`, { headers: auth });
          return res.status === 201 && (await res.json());
        },
        30_000,
      );
      // No sweeper runs in the test stack, and one would leave the record alone until REAP_AFTER_MS: the GET
      // settled it, well before then (both times are the database's).
      const record = (await recordOf(key, r.route))!;
      assert.equal(record.phase.name, "complete");
      assert.ok(record.updatedAt.getTime() - record.createdAt.getTime() < env.REAP_AFTER_MS, "before the sweeper's");
      const retry = await post(key, body);
      assert.equal(retry.status, 201);
      assert.equal(retry.json.id, settled.id, "the retry replays what the GET settled: one operation");
    });

    test("a keyless request is served and recorded under no key, as a record of this route", async () => {
      const before = await db.idempotentRequest.count({ where: { apiClientId: clientId, route: r.route } });
      const res = await post(undefined, await r.body(apiKey));
      assert.equal(res.status, 201, res.text);
      const records = await db.idempotentRequest.findMany({
        where: { apiClientId: clientId, route: r.route, idempotencyKey: null },
      });
      assert.ok(records.length >= 1);
      assert.equal(await db.idempotentRequest.count({ where: { apiClientId: clientId, route: r.route } }), before + 1);
    });
  });
}

describe("one key, two routes", () => {
  test("the same key on /api/charges and /api/refunds names two independent operations", async () => {
    const key = uniqueKey("shared");
    const charged = await postTo("/api/charges", { apiKey, key, body: chargeBody() });
    assert.equal(charged.status, 201, charged.text);
    const refunded = await postTo("/api/refunds", { apiKey, key, body: { charge: charged.json.id } });
    assert.equal(refunded.status, 201, refunded.text);
    assert.equal(refunded.headers.get("idempotent-replay"), null, "not a replay of the charge");
    assert.equal(refunded.json.object, "refund");
    assert.equal(refunded.json.amount_cents, charged.json.amount_cents);
    assert.equal((await recordOf(key, CHARGES_ROUTE))?.route, CHARGES_ROUTE);
    assert.equal((await recordOf(key, REFUNDS_ROUTE))?.route, REFUNDS_ROUTE);
    const again = await postTo("/api/charges", { apiKey, key, body: chargeBody() });
    assertError(again, 422, "idempotency_key_reused");
  });
});

describe("enforcement covers every money route", () => {
  test("with the header required of a client, a keyless charge and a keyless refund are both refused", async () => {
    const { apiKey: key, id } = await newApiClient("enforced");
    const charge = await newCharge(key);
    const staff = await db.staffUser.create({
      data: { email: `enforce-${Date.now()}@example.com`, name: "E", role: "engineer", passwordHash: "x" },
    });
    await setClientKeyRequired(id, true, staffContext(staff), "test: every route");
    assertError(await postTo("/api/charges", { apiKey: key, body: chargeBody() }), 400, "idempotency_key_required");
    assertError(await postTo("/api/refunds", { apiKey: key, body: { charge } }), 400, "idempotency_key_required");
    assert.equal(await db.refund.count({ where: { chargeId: charge } }), 0);
    const keyed = await postTo("/api/refunds", { apiKey: key, key: uniqueKey(), body: { charge } });
    assert.equal(keyed.status, 201, keyed.text);
  });
});
