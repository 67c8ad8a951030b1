/**
 * The simulator's refund in three round trips (47a2cf1), probed by an independent review (2026-12-05) through its
 * own protocol, straight at the simulator: a key decides by its unique index, the lock and the sum go with BEGIN.
 * (Through Stripe's protocol the ledger runs keyless, the keys being api.ts's: these tests are sim-only.)
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { env } from "~/env";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { closeConnections } from "../helpers";

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
  await closeConnections();
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
    const answers = await Promise.all(Array.from({ length: 20 }, () => simRefund(key, { charge, amount_cents: 300 })));
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

  test("refund_then_error: refunded, answered 500, its retry replays (200); refund_error refunds nothing", async () => {
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
