/**
 * Growth: insert and replay latency as idempotent_requests grows (default 10k,
 * 1M and 5M records; `-- --sizes 10000,100000` for a quicker run), then a prune
 * of 1M expired rows while keyed inserts run, with insert p99 before and during,
 * and EXPLAIN of the sweep and prune queries at the largest size.
 */
import { randomUUID } from "node:crypto";
import * as mariadb from "mariadb";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { chargeRequest, fmt, load, progress, startBenchStack, table } from "./lib";

const sizesArg = process.argv.indexOf("--sizes");
const SIZES = (sizesArg > 0 ? process.argv[sizesArg + 1]! : "10000,1000000,5000000").split(",").map(Number);
const EXPIRED = Number(process.env.BENCH_EXPIRED ?? 1_000_000);
const CHUNK = 250_000;

const stack = await startBenchStack();
const conn = await mariadb.createConnection({
  ...connectionOptions(stack.databaseUrl, true),
  multipleStatements: true,
});
const [{ id: clientId }] = await conn.query("SELECT id FROM api_clients LIMIT 1");

/** Adds rows with INSERT ... SELECT from MariaDB's sequence engine, in chunks. */
async function seed(from: number, to: number, expired: boolean) {
  const report = progress(expired ? "seeding expired records" : "seeding records", to);
  report(from);
  for (let start = from; start < to; start += CHUNK) {
    const end = Math.min(to, start + CHUNK);
    await conn.query(
      `INSERT INTO idempotent_requests (idempotency_key, route, api_client_id, request_hash, state, response_status,
         response_body, finished_by, created_at, updated_at, expires_at)
       SELECT CONCAT('${expired ? "old" : "seed"}-', seq), 'POST /api/charges', ?, REPEAT('0', 64), 'complete', 201,
              '{}', 'request',
              UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ${expired ? "-1" : "1"} DAY
         FROM seq_${start + 1}_to_${end}`,
      [clientId],
    );
    report(Math.min(to, start + CHUNK));
  }
}

const inserts = () => chargeRequest(stack.apiKey, { key: () => randomUUID() });
const rows: Record<string, string | number>[] = [];
let seeded = 0;
let baselineInsertP99 = 0;
try {
  await fetch(`${stack.url}/api/charges`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${stack.apiKey}`,
      "Content-Type": "application/json",
      "Idempotency-Key": "growth-replay",
    },
    body: inserts().body,
  });
  await load({ url: stack.url, duration: 3, requests: [inserts()] });
  for (const size of SIZES) {
    const t0 = performance.now();
    await seed(seeded, size, false);
    seeded = size;
    const seedSeconds = (performance.now() - t0) / 1000;
    const insert = await load({ url: stack.url, duration: 10, requests: [inserts()] });
    const replay = await load({
      url: stack.url,
      duration: 10,
      requests: [chargeRequest(stack.apiKey, { key: () => "growth-replay" })],
    });
    baselineInsertP99 ||= insert.p99;
    rows.push({
      records: size,
      "seed s": fmt(seedSeconds),
      "insert req/s": fmt(insert.rps),
      "insert p50 ms": insert.p50,
      "insert p99 ms": insert.p99,
      "insert p99 / first size": fmt(insert.p99 / baselineInsertP99, 2),
      "replay req/s": fmt(replay.rps),
      "replay p99 ms": replay.p99,
      "non-2xx": insert.non2xx + replay.non2xx,
    });
  }
  table("Latency as idempotent_requests grows (20 connections, 10 s per run)", rows);

  await seed(0, EXPIRED, true);
  const before = await load({ url: stack.url, duration: 20, requests: [inserts()] });
  const { pruneExpired } = await import("~/server/sweep/pruneExpired");
  const { env } = await import("~/env");
  const pruneStarted = performance.now();
  const pruning = pruneExpired().then((n) => ({ n, seconds: (performance.now() - pruneStarted) / 1000 }));
  // One load for exactly as long as the prune runs.
  const during = await load({ url: stack.url, until: pruning, requests: [inserts()] });
  const pruned = await pruning;
  table(`Prune of ${EXPIRED} expired rows (batches of ${env.PRUNE_BATCH_SIZE}) while keyed inserts run`, [
    { phase: "before prune (20 s)", "insert req/s": fmt(before.rps), "insert p99 ms": before.p99 },
    {
      phase: `during prune (all ${fmt(pruned.seconds)} s of it)`,
      "insert req/s": fmt(during.rps),
      "insert p99 ms": during.p99,
    },
    {
      phase: "during / before",
      "insert req/s": fmt(during.rps / before.rps, 2),
      "insert p99 ms": fmt(during.p99 / before.p99, 2),
    },
    { phase: `pruned ${pruned.n} rows in ${fmt(pruned.seconds)} s`, "insert req/s": "", "insert p99 ms": "" },
  ]);

  const explain = async (sql: string) => (await conn.query(`EXPLAIN ${sql}`))[0];
  const sweep = await explain(
    "SELECT id FROM idempotent_requests " +
      "WHERE state = 'in_progress' AND updated_at < UTC_TIMESTAMP(6) - INTERVAL 5 MINUTE ORDER BY updated_at LIMIT 100",
  );
  const prune = await explain(
    "DELETE FROM idempotent_requests WHERE expires_at < UTC_TIMESTAMP(6) ORDER BY expires_at LIMIT 1000",
  );
  table(`EXPLAIN at ${seeded} records`, [
    { query: "sweep", key: sweep.key, type: sweep.type, rows: Number(sweep.rows) },
    { query: "prune", key: prune.key, type: prune.type, rows: Number(prune.rows) },
  ]);
} finally {
  await conn.end();
  await stack.stop();
}
process.exit(0);
