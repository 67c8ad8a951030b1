/**
 * Lists (issue 41, item 7): GET /api/charges and GET /api/refunds without a key list a client's own rows, newest
 * first, by cursor, with filters (customer, charge, created); the settling GET ?idempotency_key= still answers.
 * Every list query is EXPLAINed over enough seeded rows for the optimiser to prefer an index: none scans a table.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { database } from "~/server/db";
import { listEvents } from "~/server/events/list";
import { listCharges, listRefunds } from "~/server/lists/moneyLists";
import {
  APP_URL,
  assertError,
  chargeBody,
  closeConnections,
  db,
  newApiClient,
  postCharge,
  postRefund,
  uniqueKey,
} from "./helpers";

let mine: { apiKey: string; id: number };
let theirs: { apiKey: string; id: number };
before(async () => {
  mine = await newApiClient("lists");
  theirs = await newApiClient("lists, another client");
});
after(closeConnections);

const getJson = async (path: string, key: string) => {
  const res = await fetch(`${APP_URL}${path}`, { headers: { Authorization: `Bearer ${key}` } });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text), text, headers: res.headers };
};

/** Every page of a list, following starting_after. */
async function walk(path: string, key: string, limit: number) {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 50; pages++) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await getJson(`${path}${sep}limit=${limit}${cursor ? `&starting_after=${cursor}` : ""}`, key);
    assert.equal(page.status, 200, page.text);
    ids.push(...page.json.data.map((o: any) => o.id));
    if (!page.json.has_more) return ids;
    cursor = page.json.data.at(-1).id;
  }
  throw new Error("more than 50 pages");
}

describe("GET /api/charges and /api/refunds", () => {
  const customer = `cus_list_${randomUUID().slice(0, 8)}`;
  const made: string[] = [];
  before(async () => {
    for (let i = 0; i < 7; i++) {
      const body = chargeBody({ customer_id: i % 2 === 0 ? customer : undefined, amount_cents: 1000 + i });
      const res = await postCharge({ apiKey: mine.apiKey, key: uniqueKey(), body });
      assert.equal(res.status, 201, res.text);
      made.push(res.json.id);
    }
    await postCharge({ apiKey: theirs.apiKey, key: uniqueKey(), body: chargeBody({ customer_id: customer }) });
  });

  test("a client's own charges, newest first, every one once across pages, and back", async () => {
    const all = await getJson("/api/charges?limit=100", mine.apiKey);
    assert.equal(all.json.object, "list");
    assert.equal(all.json.url, "/api/charges");
    assert.deepEqual(
      all.json.data.map((c: any) => c.id),
      [...made].reverse(),
    );
    assert.deepEqual(await walk("/api/charges", mine.apiKey, 3), [...made].reverse());
    const page = await getJson(`/api/charges?limit=2&ending_before=${made[2]}`, mine.apiKey);
    assert.deepEqual(
      page.json.data.map((c: any) => c.id),
      [made[4], made[3]],
      "the page just before it",
    );
    assert.equal(page.json.has_more, true);
  });

  test("filters: customer, created range; another client's rows never, its ids no cursor", async () => {
    const byCustomer = await getJson(`/api/charges?customer=${customer}&limit=100`, mine.apiKey);
    assert.deepEqual(
      byCustomer.json.data.map((c: any) => c.id),
      [made[6], made[4], made[2], made[0]],
    );
    const future = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    assert.deepEqual((await getJson(`/api/charges?created[gt]=${future}`, mine.apiKey)).json.data, []);
    const theirList = await getJson("/api/charges?limit=100", theirs.apiKey);
    assert.equal(theirList.json.data.length, 1);
    assert.ok(theirList.json.data.every((c: any) => !made.includes(c.id)));
    assertError(await getJson(`/api/charges?starting_after=${made[0]}`, theirs.apiKey), 400, "invalid_request");
  });

  test("refunds: by charge, with the charge's refunds on each listed charge", async () => {
    const charge = made[5]!;
    const first = await postRefund({ apiKey: mine.apiKey, key: uniqueKey(), body: { charge, amount_cents: 100 } });
    const second = await postRefund({ apiKey: mine.apiKey, key: uniqueKey(), body: { charge, amount_cents: 200 } });
    assert.equal(second.status, 201, second.text);
    const refunds = await getJson(`/api/refunds?charge=${charge}`, mine.apiKey);
    assert.equal(refunds.json.url, "/api/refunds");
    assert.deepEqual(
      refunds.json.data.map((r: any) => r.id),
      [second.json.id, first.json.id],
    );
    assert.deepEqual(refunds.json.data[0], second.json, "as POST answered it");
    assert.deepEqual((await getJson(`/api/refunds?charge=${charge}`, theirs.apiKey)).json.data, []);
    const listed = (await getJson("/api/charges?limit=100", mine.apiKey)).json.data.find((c: any) => c.id === charge);
    assert.equal(listed.amount_refunded_cents, 300);
    assert.deepEqual(
      listed.refunds.map((r: any) => r.id),
      [first.json.id, second.json.id],
    );
    const one = await getJson(`/api/charges/${charge}`, mine.apiKey);
    assert.deepEqual(listed, one.json, "a listed charge is the charge as GET shows it");
  });

  test("GET ?idempotency_key= still settles an operation", async () => {
    const key = uniqueKey();
    const res = await postCharge({ apiKey: mine.apiKey, key, body: chargeBody() });
    const settled = await getJson(`/api/charges?idempotency_key=${key}`, mine.apiKey);
    assert.equal(settled.status, 201, settled.text);
    assert.equal(settled.json.id, res.json.id);
  });
});

describe("the list queries at a realistic size", () => {
  const run = randomUUID().slice(0, 8);
  const ROWS = 3_000;
  before(async () => {
    // Other clients' rows: what a list must not read to find one client's.
    await db.$executeRawUnsafe(
      `INSERT INTO charges (id, api_client_id, customer_id, amount_cents, currency, status, gateway_charge_id,
          gateway_idempotency_key, created_at, requested_at)
       SELECT CONCAT('ch_l', ?, seq), ?, CONCAT('cus_l', seq % 50), 100, 'usd', 'succeeded', CONCAT('gw_l', ?, seq),
              CONCAT('list-', ?, '-', seq), UTC_TIMESTAMP(6) - INTERVAL seq SECOND,
              UTC_TIMESTAMP(6) - INTERVAL seq SECOND
         FROM seq_1_to_${ROWS}`,
      run,
      theirs.id,
      run,
      run,
    );
    await db.$executeRawUnsafe(
      `INSERT INTO refunds (id, charge_id, api_client_id, amount_cents, currency, gateway_refund_id,
          gateway_idempotency_key, created_at)
       SELECT CONCAT('re_l', ?, seq), CONCAT('ch_l', ?, seq), ?, 10, 'usd', CONCAT('gwre_l', ?, seq),
              CONCAT('list-re-', ?, '-', seq), UTC_TIMESTAMP(6) - INTERVAL seq SECOND
         FROM seq_1_to_${ROWS}`,
      run,
      run,
      theirs.id,
      run,
      run,
    );
    await db.$executeRawUnsafe(
      `INSERT INTO events (id, api_client_id, type, data, created_at)
       SELECT CONCAT('evt_l', ?, seq), ?, 'charge.succeeded', '{}', UTC_TIMESTAMP(3) - INTERVAL seq SECOND
         FROM seq_1_to_${ROWS}`,
      run,
      theirs.id,
    );
    await db.$executeRawUnsafe("ANALYZE TABLE charges, refunds, events");
  });
  after(async () => {
    // The run's closing ledger check must not see charges and refunds the gateway never made.
    await db.$executeRawUnsafe("DELETE FROM refunds WHERE id LIKE ?", `re_l${run}%`);
    await db.$executeRawUnsafe("DELETE FROM charges WHERE id LIKE ?", `ch_l${run}%`);
  });

  test("EXPLAIN: no list reads charges, refunds or events by a full scan", async () => {
    const pool = database.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> };
    const original = pool.query;
    const seen: { sql: string; values: unknown[] }[] = [];
    pool.query = function (this: unknown, ...args: unknown[]) {
      const [first, values] = args;
      seen.push({
        sql: typeof first === "string" ? first : (first as { sql: string }).sql,
        values: values as unknown[],
      });
      return original.apply(this, args);
    };
    const someCharge = (await db.charge.findFirstOrThrow({ where: { apiClientId: mine.id } })).id;
    const someEvent = (await db.event.findFirstOrThrow({ where: { apiClientId: mine.id } })).id;
    const q = (s: string) => new URLSearchParams(s);
    try {
      await listCharges(mine.id, q("limit=10"));
      await listCharges(mine.id, q(`starting_after=${someCharge}`));
      await listCharges(mine.id, q(`ending_before=${someCharge}`));
      await listCharges(mine.id, q("customer=cus_l7"));
      await listCharges(mine.id, q(`created[gte]=${Math.floor(Date.now() / 1000) - 60}`));
      await listRefunds(mine.id, q(`charge=${someCharge}`));
      await listRefunds(mine.id, q("limit=100"));
      await listEvents(mine.id, q("limit=10"));
      await listEvents(mine.id, q(`starting_after=${someEvent}`));
      await listEvents(mine.id, q("type=charge.failed"));
      await listEvents(mine.id, q("type=refund.*"));
      await listEvents(mine.id, q(`created[gte]=${Math.floor(Date.now() / 1000) - 60}`));
    } finally {
      pool.query = original;
    }
    const scans: string[] = [];
    for (const st of seen.filter((s) => /^\s*SELECT/i.test(s.sql))) {
      const plan = (await database.pool.query(`EXPLAIN ${st.sql}`, st.values)) as { table: string; type: string }[];
      for (const row of plan)
        if (row.type === "ALL" || (row.type === "index" && !/\bLIMIT\b/i.test(st.sql)))
          scans.push(`${row.type} scan of ${row.table}: ${st.sql.replace(/\s+/g, " ").slice(0, 200)}`);
    }
    assert.ok(seen.length >= 12, "the lists' statements were seen");
    assert.deepEqual(scans, []);
  });
});
