/**
 * The Stripe adapter, through the official SDK, against the simulator's
 * Stripe-compatible mode (the simulator serves it in every test run, whatever
 * GATEWAY says). Outcome mapping, Stripe's idempotency as the adapter sees it,
 * the lagging search behind findCharge, and the list behind listCharges.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import qs from "qs";
import Stripe from "stripe";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { StripePaymentGateway } from "~/server/gateway/stripeGateway";
import { type GatewayChargeRequest, GatewayOutcomeUnknownError } from "~/server/gateway/types";
import { SIMULATOR_STRIPE_KEY } from "../scripts/lib/config";
import {
  chargeAtGateway,
  chargeBody,
  closeConnections,
  db,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  removeGatewayCharges,
  seedRecord,
  uniqueKey,
  waitFor,
} from "./helpers";
import { env } from "~/env";
import { deriveGatewayKey } from "~/server/gateway";
import { reconcileLedger } from "~/server/ledger/reconcile";

const SIMULATOR = process.env.GATEWAY_URL!;
const WINDOW_MS = 1_000;
const adapter = new StripePaymentGateway({
  secretKey: SIMULATOR_STRIPE_KEY,
  apiBase: SIMULATOR,
  searchConsistencyMs: WINDOW_MS,
});
const sim = mariadb.createPool({
  ...mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!),
  connectionLimit: 2,
});
after(async () => {
  // Every charge made here went straight to the simulator (keys gk_test_...), with no app charge behind it: undone,
  // or the run's closing reconciliation, which lists them with GATEWAY=stripe, finds each one a mismatch.
  await sim.query("DELETE FROM sim_payment_intents WHERE idempotency_key LIKE 'gk\\_test\\_%'");
  await sim.query("DELETE FROM sim_charges WHERE idempotency_key LIKE 'gk\\_test\\_%'");
  await sim.end();
  await closeConnections();
});

const gatewayKey = () => `gk_test_${randomUUID().replaceAll("-", "")}`;
function chargeRequest(cardToken: string, overrides: Partial<GatewayChargeRequest> = {}): GatewayChargeRequest {
  const id = String(Math.floor(Math.random() * 1e9));
  return {
    amountCents: 1999,
    currency: "usd",
    cardToken,
    customerId: `cus_${randomUUID().slice(0, 12)}`,
    metadata: { requestId: id, apiClientId: "7", idempotencyKey: `client-${id}` },
    ...overrides,
  };
}
const intentsUnder = async (key: string) =>
  (await sim.query("SELECT id, metadata, status FROM sim_payment_intents WHERE idempotency_key = ?", [key])) as {
    id: string;
    metadata: Record<string, string>;
    status: string;
  }[];
const longAgo = () => new Date(Date.now() - 10 * WINDOW_MS);

/** A raw request to the simulator's Stripe mode, form-encoded the way Stripe's SDKs do it. */
async function rawCreate(key: string, params: Record<string, unknown>) {
  const res = await fetch(`${SIMULATOR}/v1/payment_intents`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${SIMULATOR_STRIPE_KEY}`,
      "Content-Type": "application/x-www-form-urlencoded",
      "Idempotency-Key": key,
    },
    body: qs.stringify(params),
  });
  return { status: res.status, replayed: res.headers.get("idempotent-replayed"), json: (await res.json()) as any };
}

describe("the simulator speaks Stripe's idempotency", () => {
  const params = {
    amount: 1000,
    currency: "usd",
    confirm: true,
    payment_method: "pm_card_visa",
    metadata: { order: "1" },
  };

  test("a retry is replayed with Idempotent-Replayed: true; other parameters are 400 idempotency_error", async () => {
    const key = gatewayKey();
    const first = await rawCreate(key, params);
    assert.equal(first.status, 200);
    assert.equal(first.replayed, null);
    const again = await rawCreate(key, { ...params, metadata: { order: "1" } });
    assert.equal(again.status, 200);
    assert.equal(again.replayed, "true");
    assert.deepEqual(again.json, first.json);
    const other = await rawCreate(key, { ...params, amount: 2000 });
    assert.equal(other.status, 400);
    assert.equal(other.json.error.type, "idempotency_error");
    assert.equal((await intentsUnder(key)).length, 1);
  });

  test("409 idempotency_key_in_use while the first request executes; then the replay", async () => {
    const key = gatewayKey();
    const slow = { ...params, payment_method: "pm_sim_slow_1000" };
    const first = rawCreate(key, slow);
    await new Promise((r) => setTimeout(r, 200));
    const during = await rawCreate(key, slow);
    assert.equal(during.status, 409);
    assert.equal(during.json.error.code, "idempotency_key_in_use");
    assert.equal((await first).status, 200);
    const replay = await rawCreate(key, slow);
    assert.equal(replay.replayed, "true");
    assert.equal(replay.json.id, (await first).json.id);
  });

  test("a decline is saved and replayed too (402 card_error with the failed PaymentIntent)", async () => {
    const key = gatewayKey();
    const first = await rawCreate(key, { ...params, payment_method: "pm_card_chargeDeclined" });
    assert.equal(first.status, 402);
    assert.equal(first.json.error.type, "card_error");
    assert.equal(first.json.error.payment_intent.status, "requires_payment_method");
    const replay = await rawCreate(key, { ...params, payment_method: "pm_card_chargeDeclined" });
    assert.equal(replay.replayed, "true");
    assert.deepEqual(replay.json, first.json);
  });

  test("unknown parameters, a missing key and a bad API key are Stripe errors", async () => {
    const unknown = await rawCreate(gatewayKey(), { ...params, amount_cents: 5 });
    assert.equal(unknown.status, 400);
    assert.match(unknown.json.error.message, /unknown parameter: amount_cents/);
    const res = await fetch(`${SIMULATOR}/v1/payment_intents/pi_nope`, {
      headers: { Authorization: "Bearer sk_live_nope" },
    });
    assert.equal(res.status, 401);
    const missing = await fetch(`${SIMULATOR}/v1/payment_intents/pi_nope`, {
      headers: { Authorization: `Bearer ${SIMULATOR_STRIPE_KEY}` },
    });
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as any).error.code, "resource_missing");
  });

  test("the official SDK's encoding arrives intact: nested metadata with awkward characters, expand[]", async () => {
    const stripe = new Stripe(SIMULATOR_STRIPE_KEY, { ...sdkBase(), maxNetworkRetries: 0 });
    const metadata = { "a b": "x&y=z", "per%cent": "100%", quote: 'it\'s "quoted"', emoji: "☃" };
    const created = await stripe.paymentIntents.create(
      {
        amount: 700,
        currency: "eur",
        confirm: true,
        payment_method: "pm_card_visa",
        metadata,
        expand: ["latest_charge"],
      },
      { idempotencyKey: gatewayKey() },
    );
    assert.deepEqual(created.metadata, metadata);
    assert.equal(typeof created.latest_charge === "object" && created.latest_charge?.object, "charge");
    const read = await stripe.paymentIntents.retrieve(created.id);
    assert.deepEqual(read.metadata, metadata);
    assert.equal(typeof read.latest_charge, "string", "not expanded unless asked");
    assert.equal(read.amount, 700);
    assert.equal(read.currency, "eur");
  });
});

function sdkBase() {
  const url = new URL(SIMULATOR);
  return { host: url.hostname, port: Number(url.port), protocol: "http" as const };
}

describe("Stripe adapter: charges", () => {
  test("one PaymentIntent per gateway key: the derived key as Idempotency-Key, the ids in metadata", async () => {
    const key = gatewayKey();
    const request = chargeRequest("tok_visa");
    const charged = await adapter.charge(request, { idempotencyKey: key, timeoutMs: 5_000 });
    assert.equal(charged.status, "succeeded");
    assert.match(charged.id, /^pi_/);
    assert.equal(charged.customerId, request.customerId);
    const again = await adapter.charge(request, { idempotencyKey: key, timeoutMs: 5_000 });
    assert.deepEqual(again, charged);
    const rows = await intentsUnder(key);
    assert.equal(rows.length, 1);
    assert.deepEqual(rows[0]!.metadata, {
      request_id: request.metadata.requestId,
      api_client_id: "7",
      idempotency_key: request.metadata.idempotencyKey,
      gateway_key: key,
      customer_id: request.customerId,
    });
  });

  test("declines are declined charges (stored as 402 by the app), not unknown outcomes", async () => {
    const cases = [
      ["tok_declined", "generic_decline"],
      ["tok_insufficient_funds", "insufficient_funds"],
      ["tok_no_such_card", "invalid_token"],
    ] as const;
    for (const [token, code] of cases) {
      const charge = await adapter.charge(chargeRequest(token), { idempotencyKey: gatewayKey(), timeoutMs: 5_000 });
      assert.equal(charge.status, "declined", token);
      assert.equal(charge.declineCode, code, token);
      assert.ok(charge.message, token);
    }
    const tooSmall = await adapter.charge(chargeRequest("tok_visa", { amountCents: 10 }), {
      idempotencyKey: gatewayKey(),
      timeoutMs: 5_000,
    });
    assert.equal(tooSmall.status, "declined");
    assert.equal(tooSmall.declineCode, "amount_too_small");
  });

  test("the key again with other parameters (idempotency_error): unknown outcome, nothing charged again", async () => {
    const key = gatewayKey();
    const request = chargeRequest("tok_visa");
    await adapter.charge(request, { idempotencyKey: key, timeoutMs: 5_000 });
    await assert.rejects(
      adapter.charge({ ...request, amountCents: 5_000 }, { idempotencyKey: key, timeoutMs: 5_000 }),
      (e: Error) => e instanceof GatewayOutcomeUnknownError && /idempotency_error/.test(e.message),
    );
    assert.equal((await intentsUnder(key)).length, 1);
  });

  test("a call while the key is in flight (409) waits for the first call's answer, within its timeout", async () => {
    const key = gatewayKey();
    const request = chargeRequest("tok_slow_1500");
    const first = adapter.charge(request, { idempotencyKey: key, timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 200));
    const second = await adapter.charge(request, { idempotencyKey: key, timeoutMs: 5_000 });
    assert.equal(second.id, (await first).id);

    const slowKey = gatewayKey();
    const slow = adapter.charge(chargeRequest("tok_slow_2500"), { idempotencyKey: slowKey, timeoutMs: 5_000 });
    await new Promise((r) => setTimeout(r, 200));
    await assert.rejects(
      adapter.charge(chargeRequest("tok_slow_2500"), { idempotencyKey: slowKey, timeoutMs: 600 }),
      GatewayOutcomeUnknownError,
    );
    await slow;
  });

  test("rate limits, 500s, timeouts and an unreachable API are unknown outcomes", async () => {
    const unknown = (token: string, timeoutMs = 5_000, gateway = adapter) =>
      assert.rejects(
        gateway.charge(chargeRequest(token), { idempotencyKey: gatewayKey(), timeoutMs }),
        GatewayOutcomeUnknownError,
        token,
      );
    await unknown("tok_rate_limited");
    await unknown("tok_error");
    await unknown("tok_charge_then_error");
    const started = Date.now();
    await unknown("tok_slow_3000", 500);
    assert.ok(Date.now() - started < 1_500, "the timeout bounds the call");

    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    const nowhere = new StripePaymentGateway({
      secretKey: SIMULATOR_STRIPE_KEY,
      apiBase: `http://127.0.0.1:${port}`,
      searchConsistencyMs: 0,
    });
    await unknown("tok_visa", 2_000, nowhere);
  });

  test("a 500 after the money moved is saved under the key: the retry finds the charge in the list", async () => {
    const key = gatewayKey();
    const request = chargeRequest("tok_charge_then_error");
    const options = { idempotencyKey: key, timeoutMs: 5_000, firstAttemptAt: new Date() };
    await assert.rejects(adapter.charge(request, options), GatewayOutcomeUnknownError, "the first answer is the 500");
    // Stripe replays the saved 500 to the retry; the adapter reads the list (search would not show it for a minute).
    const settled = await adapter.charge(request, options);
    const rows = await intentsUnder(key);
    assert.equal(rows.length, 1, "nothing charged again");
    assert.equal(rows[0]!.status, "succeeded", "the money moved");
    assert.equal(settled.id, rows[0]!.id);
    assert.equal(settled.status, "succeeded");
  });

  test("a 500 saved under a key that charged nothing stays unknown on every retry", async () => {
    const key = gatewayKey();
    const options = { idempotencyKey: key, timeoutMs: 5_000, firstAttemptAt: new Date() };
    for (let i = 0; i < 2; i++) {
      await assert.rejects(adapter.charge(chargeRequest("tok_error"), options), GatewayOutcomeUnknownError);
    }
    assert.equal((await intentsUnder(key)).length, 0);
  });
});

describe("Stripe adapter: findCharge over a lagging search", () => {
  const lookupOf = (key: string, request: GatewayChargeRequest, lastAttemptAt: Date) => ({
    idempotencyKey: key,
    metadata: request.metadata,
    lastAttemptAt,
  });

  test("a charge search cannot see yet is unproven inside the window (and would be written off after it)", async () => {
    const key = gatewayKey();
    const request = chargeRequest("tok_search_lag_60000"); // searchable only after a minute
    await adapter.charge(request, { idempotencyKey: key, timeoutMs: 5_000 });
    const soon = await adapter.findCharge(lookupOf(key, request, new Date()));
    assert.equal(soon.kind, "unproven");
    // The danger the window guards against: once it is over, a miss counts as
    // a proof. That is why it must be longer than the search can lag.
    assert.equal((await adapter.findCharge(lookupOf(key, request, longAgo()))).kind, "not_charged");
  });

  test("a young operation's charge is found at once by the list, however far search lags", async () => {
    const key = gatewayKey();
    const request = chargeRequest("tok_search_lag_60000");
    const firstAttemptAt = new Date();
    const made = await adapter.charge(request, { idempotencyKey: key, timeoutMs: 5_000 });
    const found = await adapter.findCharge({ ...lookupOf(key, request, new Date()), firstAttemptAt });
    assert.equal(found.kind === "charged" && found.charge.id, made.id);
    const never = await adapter.findCharge({ ...lookupOf(gatewayKey(), request, new Date()), firstAttemptAt });
    assert.equal(never.kind, "unproven", "a miss proves nothing while a request may still be on its way");
  });

  test("a key never charged: unproven inside the window, not_charged after it", async () => {
    const request = chargeRequest("tok_visa");
    assert.equal((await adapter.findCharge(lookupOf(gatewayKey(), request, new Date()))).kind, "unproven");
    assert.equal((await adapter.findCharge(lookupOf(gatewayKey(), request, longAgo()))).kind, "not_charged");
  });

  test("once search has caught up, the charge is found (succeeded or declined) without creating anything", async () => {
    for (const token of ["tok_visa", "tok_declined"]) {
      const key = gatewayKey();
      const request = chargeRequest(token);
      const made = await adapter.charge(request, { idempotencyKey: key, timeoutMs: 5_000 });
      const found = await waitFor(`search to show ${token}`, async () => {
        const lookup = await adapter.findCharge(lookupOf(key, request, new Date()));
        return lookup.kind === "charged" && lookup;
      });
      assert.deepEqual(found.charge, made);
      assert.equal((await intentsUnder(key)).length, 1, "the lookup created nothing");
    }
  });
});

describe("Stripe adapter: listCharges", () => {
  test("oldest first, a page at a time, each PaymentIntent of the window exactly once", async () => {
    // Start on a fresh second: Stripe's `created` is whole seconds.
    await new Promise((r) => setTimeout(r, 1_000 - (Date.now() % 1_000)));
    const since = new Date();
    const marker = `list-${randomUUID().slice(0, 8)}`;
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      const request = chargeRequest(i === 3 ? "tok_declined" : "tok_visa");
      request.metadata.apiClientId = marker;
      made.push((await adapter.charge(request, { idempotencyKey: gatewayKey(), timeoutMs: 5_000 })).id);
    }
    const until = new Date(Math.ceil((Date.now() + 1) / 1_000) * 1_000);

    const listed = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await adapter.listCharges({ since, until, cursor, limit: 3 });
      listed.push(...page.charges);
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor && pages < 50);
    assert.ok(pages >= 3, `${pages} pages of 3`);
    assert.equal(new Set(listed.map((c) => c.id)).size, listed.length, "no intent twice");
    const mine = listed.filter((c) => c.metadata?.apiClientId === marker);
    assert.deepEqual(
      mine.map((c) => c.id),
      made,
      "all of them, oldest first",
    );
    assert.equal(mine[3]!.status, "declined");
    for (const c of mine) assert.match(c.idempotencyKey, /^gk_test_/);
    const times = listed.map((c) => c.createdAt.getTime());
    assert.deepEqual(
      times,
      times.toSorted((a, b) => a - b),
    );

    // Windows are widened to whole seconds (a window ending inside a second lists that second): the one that
    // ends where this test's second began must not list what was made in it.
    const secondStart = new Date(Math.floor(since.getTime() / 1_000) * 1_000);
    const before = await adapter.listCharges({ since: new Date(since.getTime() - 60_000), until: secondStart });
    assert.ok(!before.charges.some((c) => made.includes(c.id)), "the window's lower bound holds");
  });
});

/**
 * FINDING (GATEWAY=stripe): a released claim retried after Stripe forgot its
 * idempotency key (24 h) charges a second time, and the reconciliation does not
 * see the double charge.
 *
 * "An in-progress record, however old, is finished by the sweeper" and a retry
 * of a released record "calls the gateway again under the same derived key (the
 * gateway answers with the charge it already made)". That holds only while the
 * gateway remembers the key: Stripe keeps idempotency keys for 24 hours (the
 * simulator's Stripe mode too). A record left released for longer (the sweeper
 * down for a day, or its lookups failing: a restricted key without search
 * permission, say) and then retried makes a second PaymentIntent under the same
 * derived key. The reconciliation misses it: its windows reach back 24 h at
 * most, and `doubleCharges` excuses two charges of one operation made a key
 * lifetime apart, although both name the same record in their metadata.
 *
 * Time is moved by ageing the first attempt (the record, the simulator's
 * idempotency row and the first PaymentIntent) by 25 hours. The fix: the
 * adapter looks for the PaymentIntent of an attempt older than the key's
 * lifetime before it creates one, and the reconciliation groups gateway
 * charges by the record they name, however far apart they were made.
 */
describe("the gateway's key lifetime", () => {
  const HOUR = 3_600_000;
  let apiKey: string;
  let clientId: number;
  let gatewayDb: mariadb.Pool;
  before(async () => {
    ({ apiKey, id: clientId } = await newApiClient("review stripe key lifetime"));
    gatewayDb = mariadb.createPool({
      ...mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!),
      connectionLimit: 2,
    });
  });
  // The file's own after hook closes the shared connections, once every block has run.
  after(() => gatewayDb.end());

  /** Moves the first attempt 25 h into the past: the simulator's idempotency row for the key and the PaymentIntent. */
  async function ageAtGateway(gatewayKey: string, intentId: string) {
    await gatewayDb.query(
      "UPDATE sim_stripe_idempotency SET created_at = created_at - INTERVAL 25 HOUR WHERE idempotency_key = ?",
      [gatewayKey],
    );
    await gatewayDb.query(
      `UPDATE sim_payment_intents SET created = created - 25 * 3600, created_at = created_at - INTERVAL 25 HOUR,
         searchable_at = searchable_at - INTERVAL 25 HOUR WHERE id = ?`,
      [intentId],
    );
  }

  describe("a released claim older than the gateway's key lifetime", {
    skip: env.GATEWAY !== "stripe" && "GATEWAY=stripe only",
  }, () => {
    test("is not charged again when it is retried", async () => {
      const key = uniqueKey("day-old");
      const body = chargeBody();
      // The first attempt, 25 h ago: the gateway charged, the app never heard back and released the claim.
      const record = await seedRecord({ apiClientId: clientId, phase: "released", key, body, ageMs: 25 * HOUR });
      const first = await chargeAtGateway(record, body);
      await ageAtGateway(deriveGatewayKey(record), first.id);

      // The client (or an operator replaying a queue) retries the operation with its key.
      const retry = await postCharge({ apiKey, key, body });
      const atGateway = await gatewayCharges(body.customer_id);
      console.log(
        `retry answered ${retry.status} ${retry.json?.gateway_charge_id ?? retry.text}; first charge ${first.id}; ` +
          `gateway charges ${atGateway.map((c) => c.id)}; app charges ${(await localCharges(body.customer_id)).length}`,
      );
      assert.equal(atGateway.length, 1, "one operation, one charge at the gateway");
      assert.equal(retry.status, 201);
      assert.equal(retry.json.gateway_charge_id, first.id, "the retry is answered with the charge made a day ago");
      // The aged PaymentIntent stays: the run's closing reconciliation finds the app charge's by its key.
    });

    test("two PaymentIntents of one record made a key lifetime apart are reported as a double charge", async () => {
      const key = uniqueKey("day-old-double");
      const body = chargeBody();
      const record = await seedRecord({ apiClientId: clientId, phase: "released", key, body, ageMs: 25 * HOUR });
      const first = await chargeAtGateway(record, body);
      await ageAtGateway(deriveGatewayKey(record), first.id);
      // What the adapter's look-back prevents (the test above), done directly: a create under the key Stripe has
      // forgotten makes a second PaymentIntent for the same record.
      const second = await chargeAtGateway(record, body);
      try {
        assert.notEqual(second.id, first.id, "the simulator forgot the key after 24 h, as Stripe does");
        const reconciliation = await reconcileLedger({ since: new Date(Date.now() - 26 * HOUR) });
        const doubles = reconciliation.findings.filter((f) => f.kind === "several_gateway_charges_for_one_operation");
        assert.ok(
          doubles.some((f) => f.gatewayChargeId === second.id),
          `the double charge is reported: ${JSON.stringify(doubles.map((f) => f.gatewayChargeId))}`,
        );
      } finally {
        // Out of the way of the run's closing reconciliation: the money was never the app's to keep, and what the
        // reconciliation repaired with it (an app charge, the completed record) goes with it.
        const ids = [first.id, second.id];
        await removeGatewayCharges(ids);
        await db.charge.deleteMany({ where: { gatewayChargeId: { in: ids } } });
        await db.idempotentRequest.delete({ where: { id: record.id } });
        await db.ledgerMismatch.updateMany({
          where: { gatewayChargeId: { in: ids } },
          data: { resolvedAt: new Date() },
        });
      }
    });
  });
});
