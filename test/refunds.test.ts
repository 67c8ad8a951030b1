/**
 * Refunds: what the API refuses before any claim, the limit under races, and unknown outcomes settled once.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { env } from "~/env";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { deriveGatewayKey } from "~/server/gateway";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { reapAbandoned } from "~/server/sweep/reapAbandoned";
import {
  APP_URL,
  assertError,
  chargeBody,
  closeConnections,
  db,
  gatewayRefunds,
  newApiClient,
  newCharge,
  postCharge,
  postRefund,
  recordOf,
  recordsWithKey,
  refundedOf,
  sweepUntil,
  uniqueKey,
  untilFinal,
  waitFor,
} from "./helpers";
import { randomUUID } from "node:crypto";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("refunds")));
after(closeConnections);

const refund = (body: Record<string, unknown>, key: string | undefined = uniqueKey("refund")) =>
  postRefund({ apiKey, key, body });

const getJson = async (path: string) => {
  const res = await fetch(`${APP_URL}${path}`, { headers: { Authorization: `Bearer ${apiKey}` } });
  return { status: res.status, json: await res.json() };
};

describe("POST /api/refunds", () => {
  test("201 with the refund; the charge shows amount_refunded_cents and refunds; GET /api/refunds/:id", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 2000 });
    const partial = await refund({ charge, amount_cents: 500, reason: "duplicate" });
    assert.equal(partial.status, 201, partial.text);
    assert.match(partial.json.id, /^re_[0-9a-f]{24}$/);
    assert.deepEqual(
      { charge: partial.json.charge, amount: partial.json.amount_cents, currency: partial.json.currency },
      { charge, amount: 500, currency: "usd" },
    );
    assert.equal(partial.json.status, "succeeded");
    assert.equal(partial.json.reason, "duplicate");
    const rest = await refund({ charge });
    assert.equal(rest.status, 201, rest.text);
    assert.equal(rest.json.amount_cents, 1500, "no amount: what is left");
    assert.equal(rest.json.reason, null);

    const shown = await getJson(`/api/charges/${charge}`);
    assert.equal(shown.json.amount_refunded_cents, 2000);
    assert.deepEqual(
      shown.json.refunds.map((r: { id: string }) => r.id),
      [partial.json.id, rest.json.id],
    );
    const one = await getJson(`/api/refunds/${partial.json.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.json, partial.json);
    assert.deepEqual(await refundedOf(charge), {
      charged: 2000,
      refunded: 2000,
      held: 0,
      appSum: 2000,
      gatewaySum: 2000,
      appCount: 2,
      gatewayCount: 2,
    });
  });

  test("refused before any claim: nothing stored, nothing refunded, and the key stays usable", async () => {
    const other = await newApiClient("someone else");
    const theirs = await newCharge(other.apiKey);
    const declined = await postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) });
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const cases: [Record<string, unknown>, number, string, string?][] = [
      [{ charge: "ch_000000000000000000000000" }, 404, "not_found"],
      [{ charge: theirs }, 404, "not_found"],
      [{ charge: declined.json.error.charge }, 400, "charge_not_refundable"],
      [{ charge, amount_cents: 1001 }, 400, "invalid_request", "amount_cents"],
      [{ charge, amount_cents: 0 }, 400, "invalid_request", "amount_cents"],
      [{ charge, amount_cents: -5 }, 400, "invalid_request", "amount_cents"],
      [{ charge, amount_cents: 1.5 }, 400, "invalid_request", "amount_cents"],
      [{ charge, amount_cents: "10" }, 400, "invalid_request", "amount_cents"],
      [{ charge, reason: "because" }, 400, "invalid_request", "reason"],
      [{ charge, refund_application_fee: true }, 400, "invalid_request", "refund_application_fee"],
      [{ charge: "pi_123" }, 400, "invalid_request", "charge"],
    ];
    let fixes = 0;
    for (const [body, status, code, field] of cases) {
      const key = uniqueKey("refused");
      const res = await refund(body, key);
      assertError(res, status, code);
      if (field) assert.ok(res.json.error.fields[field], `${field} named: ${res.text}`);
      assert.equal(await recordsWithKey(key), 0, `nothing stored for ${JSON.stringify(body)}`);
      if (status === 400 && body.charge === charge) {
        const fixed = await refund({ charge, amount_cents: 10 }, key);
        assert.equal(fixed.status, 201, `the key is still usable: ${fixed.text}`);
        fixes += 1;
      }
    }
    assert.equal((await gatewayRefunds(charge)).length, fixes, "only the fixed refunds moved money");
    assert.equal((await gatewayRefunds(theirs)).length, 0);

    await refund({ charge });
    const key = uniqueKey();
    assertError(await refund({ charge, amount_cents: 1 }, key), 400, "charge_already_refunded");
    assert.equal(await recordsWithKey(key), 0);
  });
});

describe("honest refusals: 'already refunded' only of money refunded", () => {
  const held = async (charge: string) => (await refundedOf(charge)).held;

  test("a full refund in flight: another is told to retry (409 refund_in_progress), then what happened", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000, card_token: "tok_refund_slow_3000" });
    const first = refund({ charge }, uniqueKey("full"));
    await waitFor("the full refund to hold the whole charge", async () => (await held(charge)) === 1000);
    const [partialKey, restKey] = [uniqueKey("partial"), uniqueKey("rest")];
    for (const [body, key] of [
      [{ charge, amount_cents: 500 }, partialKey],
      [{ charge }, restKey],
    ] as const) {
      const told = await refund(body, key);
      assertError(told, 409, "refund_in_progress");
      assert.equal(told.json.error.retryable, true, told.text);
      assert.equal(told.json.error.held_cents, 1000);
      assert.equal(told.headers.get("retry-after"), "2");
      assert.equal(await recordsWithKey(key), 0, "nothing stored: the retry may use the same key");
    }
    assert.equal((await first).status, 201);
    // Now that it is refunded, and only now, "already refunded" is true.
    const after = await refund({ charge, amount_cents: 500 }, partialKey);
    assertError(after, 400, "charge_already_refunded");
    assert.equal(after.json.error.retryable, false);
    assert.deepEqual([(await refundedOf(charge)).refunded, (await gatewayRefunds(charge)).length], [1000, 1]);
  });

  test("the refund in flight is settled: the refund told to retry is answered by what it came to", async () => {
    // The first refund's request waits at the gateway behind an outside lock on its charge, past the app's
    // timeout (503: unknown) and its deadline. Through the simulator it is then refused (its deadline passed)
    // and written off, its amount free again; through Stripe, which has no deadline, it lands. Either way the
    // refund told "in flight, retry" is answered by what really happened, never "already refunded" before.
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const { gatewayChargeId } = await db.charge.findUniqueOrThrow({ where: { id: charge } });
    const locker = await mariadb.createConnection(mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!));
    const firstKey = uniqueKey("first");
    const laterKey = uniqueKey("later");
    try {
      await locker.query("BEGIN");
      const table = env.GATEWAY === "stripe" ? "sim_payment_intents" : "sim_charges";
      await locker.query(`SELECT id FROM ${table} WHERE id = ? FOR UPDATE`, [gatewayChargeId]);
      assertError(await refund({ charge }, firstKey), 503, "gateway_unavailable");
      const told = await refund({ charge, amount_cents: 400 }, laterKey);
      assertError(told, 409, "refund_in_progress");
    } finally {
      await locker.query("ROLLBACK");
      await locker.end();
    }
    await sweepUntil(
      "the first refund to be settled",
      async () => (await recordOf(firstKey, REFUNDS_ROUTE))?.phase.name === "complete",
      30_000,
    );
    const first = await recordOf(firstKey, REFUNDS_ROUTE);
    const writtenOff = first?.phase.name === "complete" && first.phase.finishedBy === "abandoned";
    assert.equal(writtenOff, env.GATEWAY !== "stripe", "refused past its deadline by the simulator; landed at Stripe");
    const retried = await refund({ charge, amount_cents: 400 }, laterKey);
    if (writtenOff) assert.equal(retried.status, 201, retried.text);
    else assertError(retried, 400, "charge_already_refunded");
    const refunded = writtenOff ? 400 : 1000;
    assert.deepEqual(await refundedOf(charge), {
      charged: 1000,
      refunded,
      held: 0,
      appSum: refunded,
      gatewaySum: refunded,
      appCount: 1,
      gatewayCount: 1,
    });
  });

  test("more than the charge's unrefunded rest is a 400 naming amount_cents, in flight or not", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000, card_token: "tok_refund_slow_3000" });
    const first = refund({ charge, amount_cents: 600 });
    await waitFor("the refund to hold", async () => (await held(charge)) === 600);
    const over = await refund({ charge, amount_cents: 1001 });
    assertError(over, 400, "invalid_request");
    assert.match(over.json.error.fields.amount_cents[0], /at most 1000/);
    assertError(await refund({ charge, amount_cents: 500 }), 409, "refund_in_progress");
    assert.equal((await refund({ charge, amount_cents: 400 })).status, 201, "what is free is refunded at once");
    assert.equal((await first).status, 201);
  });
});

describe("never more than was charged", () => {
  test("20 concurrent refunds with different keys for one charge: the sum never exceeds it", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const answers = await Promise.all(Array.from({ length: 20 }, () => refund({ charge, amount_cents: 300 })));
    const made = answers.filter((a) => a.status === 201);
    assert.equal(made.length, 3, answers.map((a) => `${a.status} ${a.json?.error?.code ?? ""}`).join(", "));
    for (const a of answers.filter((x) => x.status !== 201)) {
      assert.ok([400, 409].includes(a.status), a.text);
    }
    const totals = await refundedOf(charge);
    assert.deepEqual(totals, {
      charged: 1000,
      refunded: 900,
      held: 0,
      appSum: 900,
      gatewaySum: 900,
      appCount: 3,
      gatewayCount: 3,
    });
  });

  test("the same with a gateway slower than the client's timeout: held amounts still count", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000, card_token: "tok_refund_slow_1500" });
    const keys = Array.from({ length: 20 }, () => uniqueKey("impatient"));
    const attempts = keys.map((key) =>
      postRefund({ apiKey, key, body: { charge, amount_cents: 300 }, signal: AbortSignal.timeout(500) }).catch(
        () => null,
      ),
    );
    await Promise.all(attempts);
    // The clients gave up; the server finishes what it started, and each client comes back until its answer is
    // final. Under load an abandoned attempt may not even have been read yet: a retry then meets it in flight (409).
    const body = { charge, amount_cents: 300 };
    const answers = await Promise.all(keys.map((key) => untilFinal(() => postRefund({ apiKey, key, body }))));
    const statuses = answers.map((a) => a.res.status).sort();
    assert.deepEqual(statuses, [...Array(3).fill(201), ...Array(17).fill(400)], statuses.join(","));
    const totals = await refundedOf(charge);
    assert.equal(totals.gatewaySum, 900);
    assert.equal(totals.appSum, 900);
    assert.equal(totals.gatewayCount, totals.appCount);
    assert.equal(totals.held, 0);
  });
});

describe("unknown outcomes", () => {
  test("the gateway refunds then fails: 503, and the retry settles it with the one refund it made", async () => {
    const charge = await newCharge(apiKey, { card_token: "tok_refund_then_error", amount_cents: 800 });
    const key = uniqueKey();
    const first = await refund({ charge, amount_cents: 800 }, key);
    assertError(first, 503, "gateway_unavailable");
    assert.equal((await refundedOf(charge)).held, 800, "the hold stays while the outcome is unknown");
    const retry = await refund({ charge, amount_cents: 800 }, key);
    assert.equal(retry.status, 201, retry.text);
    assert.deepEqual(await refundedOf(charge), {
      charged: 800,
      refunded: 800,
      held: 0,
      appSum: 800,
      gatewaySum: 800,
      appCount: 1,
      gatewayCount: 1,
    });
  });

  test("keyless: 502 refund_outcome_unknown with a handle; the sweeper settles it, found by request_id", async () => {
    const charge = await newCharge(apiKey, { card_token: "tok_refund_then_error", amount_cents: 700 });
    const res = await postRefund({ apiKey, body: { charge } });
    assertError(res, 502, "refund_outcome_unknown");
    const requestId = res.json.error.request_id as string;
    assert.match(requestId, /^\d+$/);
    await sweepUntil("the sweeper to settle the keyless refund", async () => {
      const found = await getJson(`/api/refunds?request_id=${requestId}`);
      return found.status === 201;
    });
    const totals = await refundedOf(charge);
    assert.deepEqual([totals.refunded, totals.held, totals.appCount, totals.gatewayCount], [700, 0, 1, 1]);
  });

  test("the gateway fails without refunding: the sweeper proves it and gives the hold back", async () => {
    const charge = await newCharge(apiKey, { card_token: "tok_refund_error", amount_cents: 600 });
    const key = uniqueKey();
    assertError(await refund({ charge }, key), 503, "gateway_unavailable");
    assert.equal((await refundedOf(charge)).held, 600);
    await sweepUntil("the sweeper to write the refund off", async () => {
      const record = await recordOf(key, REFUNDS_ROUTE);
      return record?.phase.name === "complete";
    });
    const replay = await refund({ charge }, key);
    assertError(replay, 500, "request_abandoned");
    assert.match(replay.json.error.message, /no refund was made/);
    assert.equal(replay.json.error.gateway, "no_trace");
    const totals = await refundedOf(charge);
    assert.deepEqual([totals.refunded, totals.held, totals.appCount, totals.gatewayCount], [0, 0, 0, 0]);
  });

  /**
   * A refund whose INSERT at the gateway waits on a stalled table (an outside gap lock where its row would go),
   * as on a stalled disk: the refund's request reaches the gateway, which does not answer; the app times out (503).
   */
  async function stalledRefund(charge: string, key: string) {
    const { gatewayChargeId } = await db.charge.findUniqueOrThrow({ where: { id: charge } });
    const options = mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!);
    const [heldCharge, stalled] = [await mariadb.createConnection(options), await mariadb.createConnection(options)];
    /** The simulator's refund INSERT waiting on `stalled`'s lock. */
    const insertWaiting = async () => {
      await new Promise((r) => setTimeout(r, 150)); // innodb_trx is a cache refreshed at most every 100 ms
      const rows: unknown[] = await stalled.query(
        `SELECT w.requesting_trx_id FROM information_schema.innodb_lock_waits w
           JOIN information_schema.innodb_trx t ON t.trx_id = w.requesting_trx_id
          WHERE w.blocking_trx_id = (SELECT trx_id FROM information_schema.innodb_trx
                                      WHERE trx_mysql_thread_id = CONNECTION_ID())
            AND t.trx_query LIKE 'INSERT INTO sim_refunds%'`,
      );
      return rows.length > 0;
    };
    try {
      // The refund waits on its charge's row until its key is known, then on a gap lock where its row would go.
      await heldCharge.query("BEGIN");
      const chargeTable = env.GATEWAY === "stripe" ? "sim_payment_intents" : "sim_charges";
      await heldCharge.query(`SELECT id FROM ${chargeTable} WHERE id = ? FOR UPDATE`, [gatewayChargeId]);
      const answer = refund({ charge }, key);
      const record = await waitFor("the claim", () => recordOf(key, REFUNDS_ROUTE));
      await stalled.query("BEGIN");
      // Through the simulator's protocol the row's place is known (its key); Stripe's stores its refunds under no
      // key of the ledger's, so there the whole table is locked (every row and gap: no refund can land meanwhile).
      if (env.GATEWAY === "stripe") await stalled.query("SELECT id FROM sim_refunds FOR UPDATE");
      else {
        await stalled.query("SELECT id FROM sim_refunds WHERE idempotency_key = ? FOR UPDATE", [
          deriveGatewayKey(record),
        ]);
      }
      await heldCharge.query("ROLLBACK");
      await waitFor("the gateway's INSERT to wait on the lock", insertWaiting, 5_000);
      assertError(await answer, 503, "gateway_unavailable");
      return {
        record,
        insertWaiting,
        /** The storage recovers: the held INSERT goes on. */
        recover: async () => {
          await stalled.query("ROLLBACK");
          await waitFor("the stalled INSERT to finish", async () => !(await insertWaiting()));
        },
        end: async () => {
          await heldCharge.end();
          await stalled.end();
        },
      };
    } catch (error) {
      await heldCharge.end();
      await stalled.end();
      throw error;
    }
  }

  const simOnly = { skip: env.GATEWAY === "stripe" && "the simulator's protocol: a deadline the gateway enforces" };
  const stripeOnly = { skip: env.GATEWAY !== "stripe" && "Stripe's protocol: no deadline to refuse a late refund by" };

  test("one whose INSERT a stalled table holds past its deadline refunds nothing", simOnly, async () => {
    // The simulator checked the refund's deadline, then inserted: an INSERT stalled past the deadline (storage, a
    // lock) landed after a sweep had written the operation off as "no refund was made" (the fault run's stall).
    const charge = await newCharge(apiKey, { amount_cents: 900 });
    const key = uniqueKey("stalled");
    const stall = await stalledRefund(charge, key);
    try {
      const deadline = stall.record.createdAt.getTime() + env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS;
      await new Promise((r) => setTimeout(r, deadline + 500 - Date.now()));
      await sweepUntil("the sweep to write it off", async () => {
        return (await recordOf(key, REFUNDS_ROUTE))?.phase.name === "complete";
      });
      assertError(await refund({ charge }, key), 500, "request_abandoned");
      assert.ok(await stall.insertWaiting(), "the refund was still stalled when the sweep wrote it off");
      await stall.recover();
      await new Promise((r) => setTimeout(r, 500));
      const totals = await refundedOf(charge);
      assert.deepEqual([totals.refunded, totals.held, totals.appCount, totals.gatewayCount], [0, 0, 0, 0]);
    } finally {
      await stall.end();
    }
  });

  test(
    "through Stripe, one whose INSERT is stalled is not written off while it can still land",
    stripeOnly,
    async () => {
      // Stripe cannot be told a deadline: a refund held up on its way lands whenever it gets there. The write-off
      // waits until its last attempt can no longer land (operations/finality.ts: the lease, then Stripe's window),
      // so the sweeps that come while it is held up must leave it be; once it lands, it is the operation's refund.
      const charge = await newCharge(apiKey, { amount_cents: 900 });
      const key = uniqueKey("stalled");
      const stall = await stalledRefund(charge, key);
      try {
        // The app has given up on its request (503): the record is released, nobody holds it.
        await reapAbandoned({ olderThanMs: 0 });
        const swept = await recordOf(key, REFUNDS_ROUTE);
        assert.notEqual(swept?.phase.name, "complete", "not written off: the refund may still land");
        await stall.recover(); // it lands
        await sweepUntil("the sweep to find the refund", async () => {
          return (await recordOf(key, REFUNDS_ROUTE))?.phase.name === "complete";
        });
        const answer = await refund({ charge }, key);
        assert.equal(answer.status, 201, answer.text);
        assert.equal(answer.headers.get("idempotent-replay"), "true");
        assert.deepEqual(await refundedOf(charge), {
          charged: 900,
          refunded: 900,
          held: 0,
          appSum: 900,
          gatewaySum: 900,
          appCount: 1,
          gatewayCount: 1,
        });
      } finally {
        await stall.end();
      }
    },
  );
});

/**
 * The simulator's refund in three round trips (47a2cf1), probed by an independent review (2026-12-05) through its
 * own protocol, straight at the simulator: a key decides by its unique index, the lock and the sum go with BEGIN.
 * (Through Stripe's protocol the ledger runs keyless, the keys being api.ts's: these tests are sim-only.)
 */
describe("the simulator's refund ledger", () => {
  /** Charges planted straight at the simulator (no app record): taken out again with their refunds, after. */
  const planted: string[] = [];
  after(async () => {
    if (planted.length) {
      const gw = await mariadb.createConnection(mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!));
      try {
        await gw.query("DELETE FROM sim_refunds WHERE charge_ref IN (?)", [planted]);
        await gw.query("DELETE FROM sim_charges WHERE id IN (?)", [planted]);
      } finally {
        await gw.end();
      }
    }
  });

  const sim = env.GATEWAY !== "stripe";
  const SIM = env.GATEWAY_URL;

  async function simCharge(amount: number, card = "tok_visa"): Promise<string> {
    const res = await fetch(new URL("/v1/charges", SIM), {
      method: "POST",
      headers: { "Content-Type": "application/json", "Idempotency-Key": `rv-ch-${randomUUID()}` },
      body: JSON.stringify({ amount_cents: amount, currency: "usd", card_token: card }),
    });
    const json = (await res.json()) as { id: string; status: string };
    assert.equal(res.status, 200, JSON.stringify(json));
    assert.equal(json.status, "succeeded");
    planted.push(json.id);
    return json.id;
  }

  type Answer = { status: number; id?: string; code?: string; ms: number };

  async function simRefund(key: string, body: Record<string, unknown>, notAfter?: Date): Promise<Answer> {
    const started = Date.now();
    const res = await fetch(new URL("/v1/refunds", SIM), {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "Idempotency-Key": key,
        ...(notAfter ? { "Charge-Not-After": notAfter.toISOString() } : {}),
      },
      body: JSON.stringify(body),
    });
    const json = (await res.json().catch(() => ({}))) as { id?: string; error?: { code: string } };
    return { status: res.status, id: json.id, code: json.error?.code, ms: Date.now() - started };
  }

  async function refundsOf(charge: string): Promise<{ id: string; amount: number; key: string }[]> {
    const rows: { id: string; amount_cents: number; charge: string; idempotency_key: string }[] = [];
    let cursor: string | null = null;
    do {
      const url = new URL("/v1/refunds", SIM);
      url.searchParams.set("created_gte", new Date(Date.now() - 600_000).toISOString());
      if (cursor) url.searchParams.set("starting_after", cursor);
      const page = (await (await fetch(url)).json()) as { data: typeof rows; next_cursor: string | null };
      rows.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return rows
      .filter((r) => r.charge === charge)
      .map((r) => ({ id: r.id, amount: r.amount_cents, key: r.idempotency_key }));
  }

  const tallyOf = (answers: Answer[]) =>
    answers.reduce<Record<string, number>>((t, a) => {
      const k = `${a.status}${a.code ? ` ${a.code}` : ""}`;
      t[k] = (t[k] ?? 0) + 1;
      return t;
    }, {});

  describe("the simulator's refund under its own protocol", { skip: !sim && "sim protocol only" }, () => {
    test("a retry of a refunded key, 40 at once, room left on the charge: all replay the one refund", async () => {
      const charge = await simCharge(10_000);
      const key = `rv-rf-${randomUUID()}`;
      const body = { charge, amount_cents: 100 };
      const first = await simRefund(key, body);
      assert.equal(first.status, 200, JSON.stringify(first));
      // Each retry now goes through the INSERT's 1062 and reads the winner with pool.query while still holding its
      // own connection: with the pool's 20 connections all held that way, nobody gets a second one.
      const pending = Promise.all(Array.from({ length: 40 }, () => simRefund(key, body)));
      // Meanwhile, anyone else's request to the simulator (here a lookup, as the sweeper makes) waits for the pool.
      await new Promise((r) => setTimeout(r, 300));
      const lookupStarted = Date.now();
      const lookup = await fetch(new URL(`/v1/refunds/by-idempotency-key/rv-none-${randomUUID()}`, SIM));
      const lookupMs = Date.now() - lookupStarted;
      const retries = await pending;
      const slowest = Math.max(...retries.map((r) => r.ms));
      console.log(`slowest replay ${slowest} ms; an unrelated lookup meanwhile: ${lookup.status} in ${lookupMs} ms`);
      assert.deepEqual(
        { tally: tallyOf(retries), ids: [...new Set(retries.map((r) => r.id))] },
        { tally: { 200: 40 }, ids: [first.id] },
        `every retry replays the first refund (slowest answer ${slowest} ms)`,
      );
      assert.equal((await refundsOf(charge)).length, 1, "refunded once");
      assert.ok(slowest < 5_000, `replays answered in ${slowest} ms`);
      assert.ok(lookupMs < 5_000, `an unrelated lookup answered ${lookup.status} in ${lookupMs} ms`);
    });

    test("one new key sent 20 times at once: one refund, every answer names it", async () => {
      const charge = await simCharge(1_000);
      const key = `rv-rf-${randomUUID()}`;
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => simRefund(key, { charge, amount_cents: 300 })),
      );
      assert.deepEqual(tallyOf(answers), { 200: 20 });
      assert.equal(new Set(answers.map((a) => a.id)).size, 1);
      const rows = await refundsOf(charge);
      assert.deepEqual(
        rows.map((r) => r.amount),
        [300],
      );
    });

    test("60 keys of random amounts racing on one charge: refunds never exceed it", async () => {
      for (let round = 0; round < 3; round++) {
        const charge = await simCharge(1_000);
        const answers = await Promise.all(
          Array.from({ length: 60 }, (_, i) =>
            simRefund(`rv-rf-${randomUUID()}`, { charge, amount_cents: 10 + ((i * 37) % 90) }),
          ),
        );
        const rows = await refundsOf(charge);
        const sum = rows.reduce((s, r) => s + r.amount, 0);
        assert.ok(sum <= 1_000, `refunded ${sum} of 1000 (${JSON.stringify(tallyOf(answers))})`);
        assert.equal(rows.length, answers.filter((a) => a.status === 200).length, "one row per 200");
        assert.ok(
          answers.every((a) => a.status === 200 || a.code === "amount_too_large"),
          JSON.stringify(tallyOf(answers)),
        );
        assert.ok(sum > 1_000 - 100, `the charge was refunded nearly all the way (${sum})`);
      }
    });

    test("a refunded key's retry replays when it would be refused: too large now, past its deadline", async () => {
      const charge = await simCharge(1_000);
      const key = `rv-rf-${randomUUID()}`;
      const first = await simRefund(key, { charge }); // all that is left
      assert.equal(first.status, 200);
      const again = await simRefund(key, { charge });
      assert.deepEqual([again.status, again.id], [200, first.id], "nothing left: replayed");
      const late = await simRefund(key, { charge }, new Date(Date.now() - 60_000));
      assert.deepEqual([late.status, late.id], [200, first.id], "past its deadline: replayed");
      const other = await simRefund(key, { charge, amount_cents: 5 });
      assert.deepEqual([other.status, other.code], [422, "idempotency_key_reused"]);
      assert.equal((await refundsOf(charge)).length, 1);
    });

    test("room left: another body under a refunded key is a mismatch; an expired new key refunds nothing", async () => {
      const charge = await simCharge(1_000);
      const key = `rv-rf-${randomUUID()}`;
      assert.equal((await simRefund(key, { charge, amount_cents: 100 })).status, 200);
      const other = await simRefund(key, { charge, amount_cents: 200 });
      assert.deepEqual([other.status, other.code], [422, "idempotency_key_reused"]);
      const expired = await simRefund(`rv-rf-${randomUUID()}`, { charge, amount_cents: 100 }, new Date(Date.now() - 1));
      assert.deepEqual([expired.status, expired.code], [410, "request_expired"]);
      assert.deepEqual(
        (await refundsOf(charge)).map((r) => r.amount),
        [100],
      );
    });

    test("refund_then_error: refunded, answered 500, its retry replays (200); refund_error: nothing", async () => {
      const charge = await simCharge(1_000, "tok_refund_then_error");
      const key = `rv-rf-${randomUUID()}`;
      const first = await simRefund(key, { charge, amount_cents: 100 });
      assert.deepEqual([first.status, first.code], [500, "processing_error"]);
      const retry = await simRefund(key, { charge, amount_cents: 100 });
      assert.equal(retry.status, 200);
      const rows = await refundsOf(charge);
      assert.deepEqual([rows.length, rows[0]?.id], [1, retry.id]);
      const failing = await simCharge(1_000, "tok_refund_error");
      const k2 = `rv-rf-${randomUUID()}`;
      assert.equal((await simRefund(k2, { charge: failing, amount_cents: 100 })).status, 500);
      assert.equal((await simRefund(k2, { charge: failing, amount_cents: 100 })).status, 500);
      assert.equal((await refundsOf(failing)).length, 0);
    });
  });
});
