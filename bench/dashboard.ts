/**
 * bench:dashboard: the dashboard's tRPC procedures on a busy day's data, while
 * the keyed-insert load of bench:growth runs (issue 16).
 *
 * Seeds (with progress lines) 5M request records over 30 days for 300 clients
 * (10 % keyless, a customer with 10k charges), 2M charges (about 2 000 possible
 * duplicates among them), 100k key reuses (10 % cross-client), 1M key events
 * and the hourly counts (the last 48 hours as shard rows, which it folds as the
 * sweeper would, timed), then finds the possible duplicates of the last two
 * days as the sweeper would (timed; `--reuse` keeps the last run's seeded
 * database instead of seeding again). Then, while the keyed-insert load of bench:growth runs: alone
 * (20 s); with four support users calling every procedure with realistic
 * inputs over HTTP, one call a second each, on the instance that takes the
 * inserts (60 s) and on the dashboard's own instance (60 s); with one caller in this
 * process calling them back to back through its own pool (60 s: what each
 * costs the database and the server code, without waiting behind the
 * saturated app); alone again (20 s). Prints p50/p95 per procedure both ways
 * and the inserts' p99 with and without the dashboard traffic.
 *
 *   npm run bench:dashboard                          the full size
 *   npm run bench:dashboard -- --records 500000      smaller (charges, reuses, events scale with it)
 *   TEST_SLOT=N npm run bench:dashboard              ports and database of slot N
 */
import { randomUUID } from "node:crypto";
import * as mariadb from "mariadb";
import superjson from "superjson";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { BENCH_PORTS, chargeRequest, fmt, load, progress, startBenchStack, table } from "./lib";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const RECORDS = arg("records", 5_000_000);
const CLIENTS = 300;
const CHUNK = 250_000;
const SPAN_MS = 30 * 24 * 3_600_000;
const TARGET_P95_MS = 150;
const TARGET_HTTP_P95_MS = 300;
const TARGET_P99_RATIO = 1.2;
/** Dashboard users over HTTP, each making one call per PACE_MS. */
const USERS = arg("users", 4);
const PACE_MS = 1_000;

/** Keep the last run's seeded database when it has the size asked for (schema changes are migrated onto it). */
const REUSE = process.argv.includes("--reuse");
/** The sweeper's first scan covers a day; the bench scans two, timed, like a first deployment would. */
const DUPLICATE_SCAN_HOURS = 48;

// Two instances of the same build on one database: the API's, which takes the insert load, and the dashboard's
// own, as the README's deployment runs it (staff pages on an instance the API traffic does not reach).
const stack = await startBenchStack({}, { fresh: !REUSE, appPorts: [BENCH_PORTS.app, BENCH_PORTS.floor] });
const dashboardUrl = stack.apps[1]!.url;
const conn = await mariadb.createConnection({
  ...connectionOptions(stack.databaseUrl, true),
  multipleStatements: true,
});

async function chunked(what: string, total: number, step: (from: number, to: number) => Promise<unknown>) {
  const report = progress(what, total);
  report(0);
  for (let from = 0; from < total; from += CHUNK) {
    const to = Math.min(total, from + CHUNK);
    await step(from, to);
    report(to);
  }
}

async function seed() {
  const t0 = performance.now();
  const [{ n }] = await conn.query("SELECT COUNT(*) AS n FROM idempotent_requests");
  if (REUSE && Number(n) >= RECORDS) {
    console.log(`reusing the ${RECORDS} records seeded by an earlier run`);
    const [{ counted }] = await conn.query("SELECT COUNT(*) AS counted FROM request_count_hours");
    if (Number(counted) === 0) await seedCounts(); // a run that stopped before the counts, or from before the fold
    return { ...(await findDuplicates()), ...(await foldCounts()), seedSeconds: 0, charges: await chargeCount() };
  }
  // The bench client is id 1 (startBenchStack made it); 299 more.
  await conn.query(`INSERT INTO api_clients (name, created_at)
                    SELECT CONCAT('client-', LPAD(seq, 3, '0')), UTC_TIMESTAMP(6)
                      FROM seq_2_to_${CLIENTS}`);
  const msPerRecord = SPAN_MS / RECORDS;
  await chunked("seeding records", RECORDS, (from, to) =>
    conn.query(
      `INSERT INTO idempotent_requests (idempotency_key, route, api_client_id, customer_id, request_hash,
          request_fields, state, attempt, lease_expires_at, last_attempt_at, response_status, response_body,
          finished_by, created_at, updated_at, expires_at)
       SELECT IF(seq % 10 = 9, NULL, MD5(seq)), 'POST /api/charges', 1 + IF(seq % 10 < 3, 0, seq % ${CLIENTS}),
              IF(seq % 500 = 0, 'cus_big', CONCAT('cus_', seq % 200000)), REPEAT('0', 64),
              '{"amount_cents":1000,"currency":"usd"}',
              IF(seq > ${RECORDS - 300}, 'in_progress', 'complete'), 1,
              IF(seq > ${RECORDS - 300} AND seq % 2 = 0, UTC_TIMESTAMP(6) + INTERVAL 1 MINUTE, NULL), t,
              IF(seq > ${RECORDS - 300}, NULL, IF(seq % 200 = 1, 500, IF(seq % 20 = 3, 402, 201))),
              IF(seq > ${RECORDS - 300}, NULL, '{}'),
              IF(seq > ${RECORDS - 300}, NULL,
                 IF(seq % 200 = 1, 'abandoned', IF(seq % 200 = 2, 'reconciled', 'request'))),
              t, t, t + INTERVAL 1 DAY
         FROM (SELECT seq,
                      UTC_TIMESTAMP(6) - INTERVAL ROUND((${RECORDS} - seq) * ${msPerRecord}) * 1000 MICROSECOND AS t
                 FROM seq_${from + 1}_to_${to}) s`,
    ),
  );
  // AUTO_INCREMENT leaves gaps between the batches of an INSERT ... SELECT: walk the ids actually used.
  const maxId = Number((await conn.query("SELECT MAX(id) AS m FROM idempotent_requests"))[0].m);
  await chunked("seeding charges (for 2 of every 5 records)", maxId, (from, to) =>
    conn.query(
      `INSERT INTO charges (id, api_client_id, customer_id, amount_cents, currency, status, failure_code,
          gateway_charge_id, gateway_idempotency_key, idempotent_request_id, created_at, requested_at)
       SELECT CONCAT('ch_', LEFT(MD5(CONCAT('c', r.id)), 24)), r.api_client_id, r.customer_id, 1000 + (r.id % 7) * 100,
              'usd', IF(r.response_status = 402, 'failed', 'succeeded'),
              IF(r.response_status = 402, 'card_declined', NULL),
              CONCAT('gw_', r.id), CONCAT('gk_', r.id), r.id, r.created_at, r.created_at
         FROM idempotent_requests r
        WHERE r.id > ${from} AND r.id <= ${to} AND r.id % 5 < 2 AND r.response_status IN (201, 402)`,
    ),
  );
  // The incident's signature: a second succeeded charge of the same customer and amount 90 s later, its record gone.
  await conn.query(
    `INSERT INTO charges (id, api_client_id, customer_id, amount_cents, currency, status, gateway_charge_id,
        gateway_idempotency_key, idempotent_request_id, created_at, requested_at)
     SELECT CONCAT('ch_d', LEFT(MD5(CONCAT('d', c.id)), 24)), c.api_client_id, c.customer_id, c.amount_cents,
            c.currency, 'succeeded', CONCAT('gwd_', c.idempotent_request_id), CONCAT('gkd_', c.idempotent_request_id),
            NULL, c.created_at + INTERVAL 90 SECOND, c.requested_at + INTERVAL 90 SECOND
       FROM charges c WHERE c.status = 'succeeded' AND c.idempotent_request_id % 1000 = 0`,
  );
  await chunked("seeding key reuses (1 in 50 records)", maxId, (from, to) =>
    conn.query(
      `INSERT INTO idempotency_key_reuses (idempotency_key, route, api_client_id, owner_api_client_id, cross_client,
          stored_hash, attempted_hash, attempted_fields, created_at)
       SELECT r.idempotency_key, r.route, IF(r.id % 500 = 0, 1 + (r.api_client_id % ${CLIENTS}), r.api_client_id),
              r.api_client_id, r.id % 500 = 0, r.request_hash, REPEAT('1', 64),
              IF(r.id % 500 = 0, NULL, '{"amount_cents":1200,"currency":"usd"}'), r.created_at + INTERVAL 5 SECOND
         FROM idempotent_requests r WHERE r.id > ${from} AND r.id <= ${to} AND r.id % 50 = 0`,
    ),
  );
  const withEvents = Math.floor(RECORDS / 10);
  await chunked("seeding key events (claim and completion of the newest 10 %)", withEvents, (from, to) =>
    conn.query(
      `INSERT INTO idempotency_events (created_at, kind, request_id, idempotency_key, route, api_client_id, attempt,
          detail, instance)
       SELECT r.created_at, 'claimed', r.id, r.idempotency_key, r.route, r.api_client_id, 1, NULL, 'bench:1'
         FROM idempotent_requests r WHERE r.id > ${RECORDS - to} AND r.id <= ${RECORDS - from}
       UNION ALL
       SELECT r.created_at + INTERVAL 200000 MICROSECOND, 'completed', r.id, r.idempotency_key, r.route,
              r.api_client_id, 1, 'request 201', 'bench:1'
         FROM idempotent_requests r
        WHERE r.id > ${RECORDS - to} AND r.id <= ${RECORDS - from} AND r.state = 'complete'`,
    ),
  );
  await seedCounts();
  const seedSeconds = (performance.now() - t0) / 1000;
  return { ...(await findDuplicates()), ...(await foldCounts()), seedSeconds, charges: await chargeCount() };
}

/** What the sweeper does after each sweep: fold the closed hours' shard rows (here, 46 hours of them), timed. */
async function foldCounts() {
  const { foldClosedHours } = await import("~/server/rollout/foldCounts");
  const [{ n }] = await conn.query("SELECT COUNT(*) AS n FROM request_count_buckets");
  const t = performance.now();
  const folded = await foldClosedHours();
  return { shardRows: Number(n), folded, foldSeconds: (performance.now() - t) / 1000 };
}

/** A month of hourly counts for every client: the last 48 hours as open shard rows, older ones as folded. */
async function seedCounts() {
  // 30 days of hourly counts per client; one client in ten still sends keyless requests; some hours are silent.
  // The request path spreads each client-hour over up to 16 shard rows; the sweeper folds closed hours into one
  // row per client-hour and one per client-day (src/server/rollout/foldCounts.ts). The last 48 hours are seeded as
  // shard rows and folded below by the sweeper's own code, timed; older ones as the fold leaves them.
  // Server modules are imported once startBenchStack has set the environment they read.
  const { COUNT_SHARDS } = await import("~/server/rollout/counters");
  const hourly = (hours: string) => `
     SELECT c.seq AS client, h.bucket, 200 + (c.seq * h.seq) % 100 AS keyed,
            IF(c.seq % 10 = 0, (c.seq + h.seq) % 7, 0) AS keyless,
            IF(c.seq % 10 = 0 AND (c.seq + h.seq) % 7 > 0, h.bucket + INTERVAL 30 MINUTE, NULL) AS last_keyless_at,
            1 + (c.seq * h.seq) % ${COUNT_SHARDS} AS shards
       FROM seq_1_to_${CLIENTS} c
       JOIN (SELECT seq,
                    CAST(DATE_FORMAT(UTC_TIMESTAMP() - INTERVAL seq HOUR, '%Y-%m-%d %H:00:00') AS DATETIME) AS bucket
               FROM ${hours}) h
      WHERE (c.seq + h.seq) % 97 <> 0`;
  await conn.query(
    `INSERT INTO request_count_hours (bucket_start, api_client_id, keyed, keyless, keyless_rejected, last_keyless_at)
     SELECT bucket, client, keyed, keyless, 0, last_keyless_at FROM (${hourly("seq_48_to_720")}) t`,
  );
  await conn.query(
    `INSERT INTO request_count_days (day, api_client_id, keyed, keyless, keyless_rejected)
     SELECT DATE(bucket_start), api_client_id, SUM(keyed), SUM(keyless), 0
       FROM request_count_hours GROUP BY DATE(bucket_start), api_client_id`,
  );
  // Each shard row gets an equal part (the first ones one more), as random picks would on average.
  await conn.query(
    `INSERT INTO request_count_buckets
        (api_client_id, bucket_start, shard, keyed, keyless, keyless_rejected, last_keyless_at)
     SELECT client, bucket, s.seq, keyed DIV shards + (s.seq < keyed % shards),
            keyless DIV shards + (s.seq < keyless % shards),
            0, IF(s.seq < keyless, last_keyless_at, NULL)
       FROM (${hourly("seq_0_to_47")}) t JOIN seq_0_to_${COUNT_SHARDS - 1} s ON s.seq < t.shards`,
  );
}

const chargeCount = async () => Number((await conn.query("SELECT COUNT(*) AS n FROM charges"))[0].n);

/** What the sweeper does after each sweep, over the last DUPLICATE_SCAN_HOURS hours, hour by hour, timed. */
async function findDuplicates() {
  await conn.query(
    `ANALYZE TABLE idempotent_requests, charges, idempotency_key_reuses, idempotency_events, request_count_buckets,
       request_count_hours, request_count_days`,
  );
  const { recordPossibleDuplicates } = await import("~/server/customers/duplicates");
  const t1 = performance.now();
  let found = 0;
  const now = Date.now();
  const report = progress("finding possible duplicates, hour by hour (the sweeper's job)", DUPLICATE_SCAN_HOURS);
  for (let h = DUPLICATE_SCAN_HOURS - 1; h >= 0; h--) {
    found += await recordPossibleDuplicates(new Date(now - (h + 1) * 3_600_000), new Date(now - h * 3_600_000));
    report(DUPLICATE_SCAN_HOURS - h);
  }
  const detectSeconds = (performance.now() - t1) / 1000;
  // The seeded second charges have no request record (their evidence is no_evidence). The incident view reads the
  // likely double charges only, so half the pairs are marked as each kind: its worst case is every pair likely.
  await conn.query(
    `UPDATE possible_duplicate_charges
        SET evidence = IF(CRC32(charge_id) % 2 = 0, 'keyless_retry', 'new_key_retry'),
            requests = '{"later":null,"earlier":null}'`,
  );
  return { detectSeconds, found };
}

/** A signed-in support user calling the tRPC endpoint as the dashboard does (GET, superjson input). */
async function dashboardUser(baseUrl: string) {
  const { hashPassword } = await import("~/server/auth/password");
  const { db } = await import("~/server/db");
  const email = `bench-${randomUUID().slice(0, 8)}@example.com`;
  const password = randomUUID();
  await db.staffUser.create({
    data: { email, name: "Bench support", role: "support", passwordHash: await hashPassword(password) },
  });
  const res = await fetch(`${baseUrl}/api/auth/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Origin: baseUrl },
    body: JSON.stringify({ email, password }),
  });
  if (!res.ok) throw new Error(`bench login failed: ${res.status} ${await res.text()}`);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  return async function call(path: string, input: unknown): Promise<{ ms: number; data: any }> {
    const query = input === undefined ? "" : `?input=${encodeURIComponent(JSON.stringify(superjson.serialize(input)))}`;
    const t = performance.now();
    const answer = await fetch(`${baseUrl}/api/trpc/${path}${query}`, { headers: { Cookie: cookie } });
    const body = await answer.text();
    const ms = performance.now() - t;
    if (!answer.ok) throw new Error(`${path}: ${answer.status} ${body.slice(0, 300)}`);
    return { ms, data: superjson.deserialize((JSON.parse(body) as { result: { data: any } }).result.data) };
  };
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN;
};

try {
  const seeded = await seed();
  table("Seeded", [
    {
      records: RECORDS,
      charges: seeded.charges,
      "seed s": fmt(seeded.seedSeconds),
      "possible duplicates found": seeded.found,
      [`duplicate scan of ${DUPLICATE_SCAN_HOURS} h, s`]: fmt(seeded.detectSeconds),
      "per hour of charges ms": fmt((seeded.detectSeconds * 1000) / DUPLICATE_SCAN_HOURS),
      ...("folded" in seeded
        ? { "count shard rows folded": `${seeded.folded} of ${seeded.shardRows}`, "fold s": fmt(seeded.foldSeconds) }
        : {}),
    },
  ]);

  const call = await dashboardUser(stack.url);
  const callOwnInstance = await dashboardUser(dashboardUrl);
  // Inputs a support engineer sends during an incident; a deep cursor is found by walking the log first.
  const day = new Date(Date.now() - 24 * 3_600_000);
  let deepCursor: string | null = null;
  for (let page = 0, cursor: string | null = null; page < 40; page++) {
    cursor = (await call("requests.list", { limit: 100, ...(cursor ? { cursor } : {}) })).data.nextCursor;
    deepCursor = cursor;
  }
  let bigCustomerCursor: string | null = null;
  for (let page = 0, cursor: string | null = null; page < 50; page++) {
    cursor = (await call("customers.charges", { customerId: "cus_big", limit: 100, ...(cursor ? { cursor } : {}) }))
      .data.nextCursor;
    bigCustomerCursor = cursor;
  }
  const someKey = (await call("requests.list", { apiClientId: 7, limit: 1 })).data.items[0];
  const someCharge = (await call("customers.charges", { customerId: "cus_big", limit: 1 })).data.charges[0]
    .id as string;
  const procedures: [string, string, unknown][] = [
    ["requests.list first page", "requests.list", { limit: 25 }],
    ["requests.list deep cursor (4 000 rows down)", "requests.list", { limit: 25, cursor: deepCursor }],
    ["requests.list phase=released", "requests.list", { phase: "released" }],
    ["requests.list phase=abandoned", "requests.list", { phase: "abandoned" }],
    ["requests.list phase=request", "requests.list", { phase: "request" }],
    ["requests.list status=402", "requests.list", { status: "402" }],
    ["requests.list status=500", "requests.list", { status: "500" }],
    ["requests.list route", "requests.list", { route: "POST /api/charges" }],
    ["requests.list client (the largest)", "requests.list", { apiClientId: 1 }],
    ["requests.list customer", "requests.list", { customerId: "cus_1234" }],
    ["requests.list since 24 h", "requests.list", { since: day }],
    ["requests.list client+status+since", "requests.list", { apiClientId: 7, status: "402", since: day }],
    [
      "requests.list client+phase+route",
      "requests.list",
      { apiClientId: 1, phase: "abandoned", route: "POST /api/charges" },
    ],
    ["requests.list client deep cursor", "requests.list", { apiClientId: 1, cursor: deepCursor }],
    ["requests.count (no filter: 10 000+)", "requests.count", {}],
    ["requests.count client+status", "requests.count", { apiClientId: 7, status: "201" }],
    ["requests.count phase=in_progress", "requests.count", { phase: "in_progress" }],
    ["requests.search 3 characters", "requests.search", { prefix: "a1b" }],
    [
      "requests.search 12 characters",
      "requests.search",
      { prefix: (someKey.idempotencyKey ?? "0123456789ab").slice(0, 12) },
    ],
    ["requests.byId (timeline)", "requests.byId", { id: someKey.id }],
    ["requests.reuses same client", "requests.reuses", { kind: "same_client" }],
    ["requests.reuses cross client", "requests.reuses", { kind: "cross_client" }],
    ["requests.reuseCounts", "requests.reuseCounts", undefined],
    ["requests.filterOptions", "requests.filterOptions", undefined],
    ["customers.charges 10k-charge customer", "customers.charges", { customerId: "cus_big" }],
    [
      "customers.charges 10k-charge customer, deep",
      "customers.charges",
      { customerId: "cus_big", cursor: bigCustomerCursor },
    ],
    ["customers.charge", "customers.charge", { id: someCharge }],
    ["customers.duplicates", "customers.duplicates", { windowMinutes: 10 }],
    [
      "customers.duplicates likely, last day",
      "customers.duplicates",
      { windowMinutes: 60, evidence: "likely", since: day },
    ],
    ["customers.incident last day", "customers.incident", { since: day, until: new Date(Date.now() + 3_600_000) }],
    [
      "customers.incident 30 days",
      "customers.incident",
      { since: new Date(Date.now() - 30 * 24 * 3_600_000), until: new Date(Date.now() + 3_600_000) },
    ],
    ["customers.charges 10k-charge customer, one day", "customers.charges", { customerId: "cus_big", since: day }],
    ["requests.resolve (a whole charge id)", "requests.resolve", { q: someCharge }],
    ["rollout.status", "rollout.status", undefined],
    ["rollout.series hourly, all clients", "rollout.series", { granularity: "hour" }],
    ["rollout.series daily, all clients", "rollout.series", { granularity: "day" }],
    ["rollout.series hourly, one client", "rollout.series", { granularity: "hour", clientIds: [10] }],
    ["rollout.series daily, one client", "rollout.series", { granularity: "day", clientIds: [10] }],
    ["rollout.modeChanges", "rollout.modeChanges", {}],
    ["ledger.status", "ledger.status", undefined],
    ["ledger.mismatches", "ledger.mismatches", {}],
    ["sweep.status", "sweep.status", undefined],
  ];
  // Warm up both instances, and fail early on a bad input.
  for (const [, path, input] of procedures) await Promise.all([call(path, input), callOwnInstance(path, input)]);

  const inserts = () => chargeRequest(stack.apiKey, { key: () => randomUUID() });
  const insertLoad = (seconds: number) => load({ url: stack.url, duration: seconds, requests: [inserts()] });

  // Over HTTP, as browsers do: USERS support users, each calling the next procedure once a second (a page's
  // lists refresh every 5 to 15 s; this is several busy pages at once). Twice: on the API's instance, where a
  // call waits in the event loop the insert load keeps saturated, and on the dashboard's own instance.
  let stop = false;
  const httpUsers = (user: typeof call) => {
    const times = new Map<string, number[]>(procedures.map(([name]) => [name, []]));
    const running = Array.from({ length: USERS }, async (_, offset) => {
      for (let i = offset * 7; !stop; i++) {
        const [name, path, input] = procedures[i % procedures.length]!;
        const started = performance.now();
        times.get(name)!.push((await user(path, input)).ms);
        await new Promise((r) => setTimeout(r, Math.max(0, PACE_MS - (performance.now() - started))));
      }
    });
    return { times, done: () => Promise.all(running) };
  };
  // In this process, through its own pool: what each procedure costs the database and the server code, without
  // the wait behind the saturated app's event loop. One caller, back to back.
  const { createCaller } = await import("~/server/trpc/root");
  const { createInnerTRPCContext } = await import("~/server/trpc/trpc");
  const { db } = await import("~/server/db");
  const staff = await db.staffUser.findFirstOrThrow({ where: { role: "support" } });
  const caller = createCaller(
    createInnerTRPCContext({ user: { id: staff.id, email: staff.email, name: staff.name, role: "support" } }),
  );
  const inProcess = new Map<string, number[]>(procedures.map(([name]) => [name, []]));
  const direct = async () => {
    for (let i = 0; !stop; i++) {
      const [name, path, input] = procedures[i % procedures.length]!;
      const [router, procedure] = path.split(".") as [string, string];
      const started = performance.now();
      await (caller as any)[router][procedure](input);
      inProcess.get(name)!.push(performance.now() - started);
    }
  };

  const before = await insertLoad(20);
  const onApi = httpUsers(call);
  const withHttp = await insertLoad(60);
  stop = true;
  await onApi.done();
  stop = false;
  const onOwn = httpUsers(callOwnInstance);
  const withHttpOwn = await insertLoad(60);
  stop = true;
  await onOwn.done();
  stop = false;
  const directRun = direct();
  const withDirect = await insertLoad(60);
  stop = true;
  await directRun;
  const afterwards = await insertLoad(20);

  table(
    `Dashboard procedures at ${RECORDS.toLocaleString("en")} records, under the keyed-insert load (20 connections)`,
    procedures.map(([name]) => {
      const http = onApi.times.get(name)!;
      const ownHttp = onOwn.times.get(name)!;
      const own = inProcess.get(name)!;
      const p95 = quantile(own, 0.95);
      const ownHttpP95 = quantile(ownHttp, 0.95);
      return {
        procedure: name,
        "in-process calls": own.length,
        "p50 ms": fmt(quantile(own, 0.5)),
        "p95 ms": fmt(p95),
        [`<= ${TARGET_P95_MS} ms`]: p95 <= TARGET_P95_MS ? "yes" : "NO",
        "HTTP on the API's instance p50 / p95 ms": `${fmt(quantile(http, 0.5))} / ${fmt(quantile(http, 0.95))}`,
        "HTTP on its own instance calls": ownHttp.length,
        "p50 / p95 ms": `${fmt(quantile(ownHttp, 0.5))} / ${fmt(ownHttpP95)}`,
        [`<= ${TARGET_HTTP_P95_MS} ms`]: ownHttpP95 <= TARGET_HTTP_P95_MS ? "yes" : "NO",
      };
    }),
  );
  const baseline = (before.p99 + afterwards.p99) / 2;
  const baseRps = (before.rps + afterwards.rps) / 2;
  table("Keyed inserts (20 connections)", [
    { phase: "alone, before (20 s)", "req/s": fmt(before.rps), "p99 ms": before.p99, "non-2xx": before.non2xx },
    {
      phase: `with ${USERS} dashboard users over HTTP on the API's instance (60 s)`,
      "req/s": fmt(withHttp.rps),
      "p99 ms": withHttp.p99,
      "non-2xx": withHttp.non2xx,
    },
    {
      phase: `with ${USERS} dashboard users over HTTP on their own instance (60 s)`,
      "req/s": fmt(withHttpOwn.rps),
      "p99 ms": withHttpOwn.p99,
      "non-2xx": withHttpOwn.non2xx,
    },
    {
      phase: "with the in-process caller (60 s)",
      "req/s": fmt(withDirect.rps),
      "p99 ms": withDirect.p99,
      "non-2xx": withDirect.non2xx,
    },
    {
      phase: "alone, after (20 s)",
      "req/s": fmt(afterwards.rps),
      "p99 ms": afterwards.p99,
      "non-2xx": afterwards.non2xx,
    },
    {
      phase: "with HTTP users on the API's instance / alone",
      "req/s": fmt(withHttp.rps / baseRps, 2),
      "p99 ms": fmt(withHttp.p99 / baseline, 2),
      "non-2xx": `target p99 <= ${TARGET_P99_RATIO}`,
    },
    {
      phase: "with HTTP users on their own instance / alone",
      "req/s": fmt(withHttpOwn.rps / baseRps, 2),
      "p99 ms": fmt(withHttpOwn.p99 / baseline, 2),
      "non-2xx": `target p99 <= ${TARGET_P99_RATIO}`,
    },
    {
      phase: "with in-process caller / alone",
      "req/s": fmt(withDirect.rps / baseRps, 2),
      "p99 ms": fmt(withDirect.p99 / baseline, 2),
      "non-2xx": "",
    },
  ]);
} finally {
  await conn.end();
  await stack.stop();
}
process.exit(0);
