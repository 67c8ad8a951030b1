/**
 * Every query the dashboard's procedures send, EXPLAINed: none may read
 * idempotent_requests or charges by a full table scan (issue 16). The
 * procedures are called as the dashboard calls them (first and deep pages,
 * each filter alone and combined, prefix searches, a customer's charges, the
 * duplicates, the rollout), over enough seeded rows for the optimiser to
 * prefer an index where one fits, and each statement the pool saw is
 * EXPLAINed with its own values. The seeded rows are removed afterwards (the
 * run's closing ledger check must not see them).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { staffContext } from "~/server/audit/audit";
import type { SessionUser } from "~/server/auth/session";
import { scanForDuplicates } from "~/server/customers/duplicates";
import { database } from "~/server/db";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { closeConnections, db, newApiClient } from "./helpers";

const RECORDS = 20_000;
let clientId: number;
let support: SessionUser;
let engineer: SessionUser;
const run = randomUUID().slice(0, 8);

async function seed() {
  await db.$executeRawUnsafe(
    `INSERT INTO idempotent_requests (idempotency_key, route, api_client_id, customer_id, request_hash, request_fields,
        state, attempt, lease_expires_at, last_attempt_at, response_status, response_body, finished_by, created_at,
        updated_at, expires_at)
     SELECT MD5(CONCAT(?, seq)), 'POST /api/charges', ?, CONCAT('cus_x', ?, '_', seq % 400), REPEAT('0', 64),
            '{"amount_cents":1000,"currency":"usd"}',
            IF(seq % 1000 = 0, 'in_progress', 'complete'), 1, NULL, UTC_TIMESTAMP(6) - INTERVAL seq * 30 SECOND,
            IF(seq % 1000 = 0, NULL, IF(seq % 200 = 0, 500, IF(seq % 20 = 0, 402, 201))),
            IF(seq % 1000 = 0, NULL, '{}'),
            IF(seq % 1000 = 0, NULL, IF(seq % 200 = 0, 'abandoned', 'request')),
            UTC_TIMESTAMP(6) - INTERVAL seq * 30 SECOND, UTC_TIMESTAMP(6) - INTERVAL seq * 30 SECOND,
            UTC_TIMESTAMP(6) + INTERVAL 1 DAY
       FROM seq_1_to_${RECORDS}`,
    run,
    clientId,
    run,
  );
  await db.$executeRawUnsafe(
    `INSERT INTO charges (id, api_client_id, customer_id, amount_cents, currency, status, failure_code,
        gateway_charge_id, gateway_idempotency_key, idempotent_request_id, created_at, requested_at)
     SELECT CONCAT('ch_x', LEFT(MD5(CONCAT(?, r.id)), 24)), r.api_client_id, r.customer_id, 1000, 'usd',
            IF(r.response_status = 201, 'succeeded', 'failed'), IF(r.response_status = 201, NULL, 'card_declined'),
            CONCAT('gw_x', r.id), CONCAT('explain-', ?, '-', r.id), r.id, r.created_at, r.created_at
       FROM idempotent_requests r WHERE r.api_client_id = ? AND r.response_status IN (201, 402)`,
    run,
    run,
    clientId,
  );
  await db.$executeRawUnsafe(
    `INSERT INTO idempotency_key_reuses (idempotency_key, route, api_client_id, owner_api_client_id, cross_client,
        stored_hash, attempted_hash, created_at)
     SELECT MD5(CONCAT(?, seq)), 'POST /api/charges', ?, ?, seq % 10 = 0, REPEAT('0', 64), REPEAT('1', 64),
            UTC_TIMESTAMP(6) - INTERVAL seq MINUTE
       FROM seq_1_to_2000`,
    run,
    clientId,
    clientId,
  );
  await db.$executeRawUnsafe("ANALYZE TABLE idempotent_requests, charges, idempotency_key_reuses");
}

async function removeSeeded() {
  await db.possibleDuplicateCharge.deleteMany({ where: { apiClientId: clientId } });
  await db.charge.deleteMany({ where: { apiClientId: clientId } });
  await db.idempotentRequest.deleteMany({ where: { apiClientId: clientId } });
  await db.keyReuseAttempt.deleteMany({ where: { apiClientId: clientId } });
}

async function staff(role: "support" | "engineer"): Promise<SessionUser> {
  const u = await db.staffUser.create({
    data: { email: `${role}-explain-${run}@example.com`, name: `E ${role}`, role, passwordHash: "x" },
  });
  return { id: u.id, email: u.email, name: u.name, role: u.role };
}

before(async () => {
  clientId = (await newApiClient("explain")).id;
  support = await staff("support");
  engineer = await staff("engineer");
  await seed();
});
after(async () => {
  await removeSeeded();
  await closeConnections();
});

type Seen = { sql: string; values: unknown[]; procedure: string };

/** Runs `work` and returns every statement it sent through the pool. */
async function captured(procedure: string, work: () => Promise<unknown>): Promise<Seen[]> {
  const pool = database.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> };
  const original = pool.query;
  const seen: Seen[] = [];
  pool.query = function (this: unknown, ...args: unknown[]) {
    const [first, values] = args;
    const sql = typeof first === "string" ? first : (first as { sql: string }).sql;
    seen.push({ sql, values: (values as unknown[] | undefined) ?? [], procedure });
    return original.apply(this, args);
  };
  try {
    await work();
  } finally {
    pool.query = original;
  }
  return seen;
}

const SCANNED =
  /\b(idempotent_requests|charges)\b(?:\s+(?:AS\s+)?(?!WHERE|USE|FORCE|ON|JOIN|LIMIT|ORDER|GROUP)(\w+))?/gi;

describe("the dashboard's queries at a realistic size", () => {
  test("EXPLAIN: no dashboard query reads idempotent_requests or charges by a full scan", async () => {
    const as = (user: SessionUser) => createCaller(createInnerTRPCContext({ user }));
    const s = as(support);
    const e = as(engineer);
    const firstPage = await s.requests.list({ limit: 25 });
    // A deep page: walk a few pages down, then take the cursor from there.
    let deep = firstPage.nextCursor;
    for (let i = 0; i < 20 && deep; i++) deep = (await s.requests.list({ limit: 100, cursor: deep })).nextCursor;
    const customer = `cus_x${run}_7`;
    const since = new Date(Date.now() - 24 * 3_600_000);
    const someRecord = firstPage.items[0]!.id;
    const someCharge = (await s.customers.charges({ customerId: customer })).charges[0]!.id;
    await scanForDuplicates();

    const calls: [string, () => Promise<unknown>][] = [
      ["requests.list", () => s.requests.list({ limit: 25 })],
      ["requests.list deep", () => s.requests.list({ limit: 25, cursor: deep })],
      ...(
        ["in_progress", "held", "lease_expired", "released", "complete", "request", "reconciled", "abandoned"] as const
      ).map((phase): [string, () => Promise<unknown>] => [
        `requests.list phase=${phase}`,
        () => s.requests.list({ phase }),
      ]),
      ...(["201", "402", "500", "none"] as const).map((status): [string, () => Promise<unknown>] => [
        `requests.list status=${status}`,
        () => s.requests.list({ status }),
      ]),
      ["requests.list route", () => s.requests.list({ route: "POST /api/charges" })],
      ["requests.list client", () => s.requests.list({ apiClientId: clientId })],
      ["requests.list customer", () => s.requests.list({ customerId: customer })],
      ["requests.list since", () => s.requests.list({ since })],
      [
        "requests.list combined",
        () => s.requests.list({ apiClientId: clientId, status: "402", since, route: "POST /api/charges" }),
      ],
      [
        "requests.list combined phase",
        () => s.requests.list({ apiClientId: clientId, phase: "abandoned", customerId: customer }),
      ],
      ["requests.list combined deep", () => s.requests.list({ apiClientId: clientId, phase: "request", cursor: deep })],
      ["requests.count", () => s.requests.count({})],
      ["requests.count combined", () => s.requests.count({ apiClientId: clientId, status: "201", since })],
      ["requests.count phase", () => s.requests.count({ phase: "released" })],
      ["requests.search 3", () => s.requests.search({ prefix: "a1b" })],
      ["requests.search 12", () => s.requests.search({ prefix: `cus_x${run.slice(0, 7)}` })],
      ["requests.byId", () => s.requests.byId({ id: someRecord })],
      ["requests.reuses", () => s.requests.reuses({ kind: "same_client" })],
      ["requests.reuses cross", () => s.requests.reuses({ kind: "cross_client" })],
      ["requests.reuseCounts", () => s.requests.reuseCounts()],
      ["requests.filterOptions", () => s.requests.filterOptions()],
      ["customers.charges", () => s.customers.charges({ customerId: customer })],
      [
        "customers.charges deep",
        async () => {
          const page = await s.customers.charges({ customerId: customer, limit: 10 });
          return s.customers.charges({ customerId: customer, limit: 10, cursor: page.nextCursor });
        },
      ],
      ["customers.charge", () => s.customers.charge({ id: someCharge })],
      ["customers.duplicates", () => s.customers.duplicates({})],
      ["customers.duplicates likely", () => s.customers.duplicates({ evidence: "likely", since })],
      ["customers.incident", () => s.customers.incident({ since, until: new Date() })],
      ["customers.incident hours", () => s.customers.incident({ hours: 24 })],
      ["refunds.ofCharge", () => s.refunds.ofCharge({ chargeId: someCharge })],
      ["requests.list abandoned", () => s.requests.list({ abandoned: "no_trace" })],
      ["requests.count abandoned", () => s.requests.count({ abandoned: "refused", apiClientId: clientId })],
      ["requests.resolve quoted key", () => s.requests.resolve({ q: '"a1b2c3"' })],
      ["customers.charges range", () => s.customers.charges({ customerId: customer, since, until: new Date() })],
      ["requests.resolve charge", () => s.requests.resolve({ q: someCharge })],
      ["requests.resolve customer", () => s.requests.resolve({ q: customer })],
      ["rollout.status", () => s.rollout.status()],
      ["rollout.series hour", () => s.rollout.series({ granularity: "hour" })],
      ["rollout.series minute client", () => s.rollout.series({ granularity: "minute", clientIds: [clientId] })],
      ["rollout.series day client", () => s.rollout.series({ granularity: "day", clientIds: [clientId] })],
      ["rollout.modeChanges", () => s.rollout.modeChanges({})],
      ["ledger.status", () => s.ledger.status()],
      ["ledger.mismatches", () => s.ledger.mismatches({})],
      ["sweep.status", () => s.sweep.status()],
      ["audit.list", () => e.audit.list({ limit: 50 })],
    ];
    const statements: Seen[] = [];
    for (const [name, call] of calls) statements.push(...(await captured(name, call)));

    const checked: string[] = [];
    const fullScans: string[] = [];
    for (const st of statements) {
      if (!/^\s*(SELECT|WITH)\b/i.test(st.sql)) continue;
      const names = new Set<string>();
      for (const m of st.sql.matchAll(SCANNED)) {
        names.add(m[1]!.toLowerCase());
        if (m[2]) names.add(m[2].toLowerCase());
      }
      if (names.size === 0) continue;
      const plan = (await database.pool.query(`EXPLAIN ${st.sql}`, st.values)) as {
        table: string | null;
        type: string;
        key: string | null;
      }[];
      checked.push(st.procedure);
      for (const row of plan) {
        if (!row.table || !names.has(row.table.replace(/`/g, "").toLowerCase())) continue;
        // ALL reads the table; "index" reads a whole index, which is a walk that stops only under a LIMIT.
        if (row.type === "ALL" || (row.type === "index" && !/\bLIMIT\b/i.test(st.sql))) {
          fullScans.push(
            `${st.procedure}: ${row.type} scan of ${row.table}\n  ${st.sql.replace(/\s+/g, " ").slice(0, 400)}`,
          );
        }
      }
    }
    assert.ok(new Set(checked).size >= 30, `EXPLAINed the statements of ${new Set(checked).size} calls`);
    assert.deepEqual(fullScans, []);
    void staffContext;
  });

  test("ANALYZE: a deep page of the biggest client reads its page, not every row newer than the cursor", async () => {
    // This client holds most of the table, as the largest client does at 5M records: asked for whole rows,
    // MariaDB then reads its index by the client alone from the newest row down (recordListStatement).
    const s = createCaller(createInnerTRPCContext({ user: support }));
    let cursor: string | null = null;
    for (let i = 0; i < 20; i++) {
      cursor = (await s.requests.list({ apiClientId: clientId, limit: 100, ...(cursor ? { cursor } : {}) })).nextCursor;
    }
    assert.ok(cursor, "2 000 rows down");
    const statements = await captured("requests.list client deep", () =>
      s.requests.list({ apiClientId: clientId, limit: 25, cursor }),
    );
    const list = statements.find((st) => /ORDER BY created_at DESC/.test(st.sql))!;
    const [row] = (await database.pool.query(`ANALYZE FORMAT=JSON ${list.sql}`, list.values)) as {
      ANALYZE: string;
    }[];
    const read: { table: string; rows: number; access: string }[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) {
        for (const child of node) walk(child);
        return;
      }
      if (!node || typeof node !== "object") return;
      const t = (node as { table?: { table_name: string; r_rows?: number; r_loops?: number; access_type: string } })
        .table;
      if (t?.table_name === "idempotent_requests") {
        read.push({ table: t.table_name, rows: (t.r_rows ?? 0) * (t.r_loops ?? 1), access: t.access_type });
      }
      for (const child of Object.values(node)) walk(child);
    };
    walk(JSON.parse(row!.ANALYZE));
    assert.ok(read.length > 0, row!.ANALYZE);
    // 26 index entries and 26 rows by primary key; the plan before the fix read ~2 000 rows with their lookups.
    for (const r of read) assert.ok(r.rows <= 30, `${r.access} read ${r.rows} rows: ${row!.ANALYZE}`);
  });
});
