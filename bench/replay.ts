/**
 * Replay path: replays per second through the app vs the floor for this stack,
 * a minimal node:http + mariadb server doing the same indexed lookup, and vs
 * two Next.js references (a route with no database, a route with one Prisma
 * query). Two app rows: a request this process finished (answered from memory
 * for a minute, see idempotency/memory.ts) and one finished elsewhere (through
 * the database: the claim's INSERT fails on the unique index and the read sent
 * with it, in the same round trip, answers).
 */
import { createServer } from "node:http";
import * as mariadb from "mariadb";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { BENCH_PORTS, chargeRequest, fmt, interleaved, startBenchStack, table, type Interleaved } from "./lib";

const stack = await startBenchStack();
const pool = mariadb.createPool({ ...connectionOptions(stack.databaseUrl, true), connectionLimit: 10 });
const floor = createServer((req, res) => {
  const key = String(req.headers["idempotency-key"]);
  pool
    .query("SELECT response_status, response_body FROM idempotent_requests WHERE idempotency_key = ? AND route = ?", [
      key,
      "POST /api/charges",
    ])
    .then((rows) => {
      res.writeHead(rows[0]?.response_status ?? 404, {
        "Content-Type": "application/json",
        "Idempotent-Replay": "true",
      });
      res.end(rows[0]?.response_body ?? "{}");
    })
    .catch(() => res.writeHead(503).end());
});
await new Promise<void>((r) => floor.listen(BENCH_PORTS.floor, "127.0.0.1", r));
try {
  const first = await fetch(`${stack.url}/api/charges`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${stack.apiKey}`,
      "Content-Type": "application/json",
      "Idempotency-Key": "replay-me",
    },
    body: chargeRequest(stack.apiKey).body,
  });
  if (first.status !== 201) throw new Error(`set-up charge failed: ${first.status}`);
  // The same finished record under another key, as another app instance would have left it.
  const db = await mariadb.createConnection(connectionOptions(stack.databaseUrl, true));
  await db.query(
    `INSERT INTO idempotent_requests (idempotency_key, route, api_client_id, request_hash, state, attempt,
       last_attempt_at, response_status, response_body, finished_by, created_at, updated_at, expires_at)
     SELECT 'replay-elsewhere', route, api_client_id, request_hash, state, attempt, last_attempt_at,
            response_status, response_body, finished_by, created_at, updated_at, expires_at
       FROM idempotent_requests WHERE idempotency_key = 'replay-me'`,
  );
  await db.end();
  const replay = chargeRequest(stack.apiKey, { key: () => "replay-me" });
  const replayElsewhere = chargeRequest(stack.apiKey, { key: () => "replay-elsewhere" });
  // Where the difference goes: the same route module answering without the
  // database (GET /api/charges is a 405), and one Prisma query (/api/health).
  const r = await interleaved({
    floor: { url: `http://127.0.0.1:${BENCH_PORTS.floor}`, requests: [replayElsewhere] },
    database: { url: stack.url, requests: [replayElsewhere], pid: stack.pid },
    memory: { url: stack.url, requests: [replay], pid: stack.pid },
    framework: { url: `${stack.url}/api/charges`, pid: stack.pid },
    oneQuery: { url: `${stack.url}/api/health`, pid: stack.pid },
  });
  const row = (server: string, x: Interleaved) => ({
    server,
    "req/s": fmt(x.rps),
    "p50 ms": x.p50,
    "p99 ms": x.p99,
    "vs floor": fmt(x.rps / r.floor.rps, 3),
    "app CPU ms / request": x.cpuMsPerRequest === undefined ? "" : fmt(x.cpuMsPerRequest, 2),
  });
  table("Replays of one finished request (20 connections, 6 slices of 3 s each, interleaved)", [
    row("node:http + mariadb, same indexed lookup (floor)", r.floor),
    row("Charges: replay through the database (the claim fails, its read answers)", r.database),
    row("Charges: replay of this process's own recent answer (memory)", r.memory),
    row("reference: Next.js route, no database (GET /api/charges, 405)", r.framework),
    row("reference: Next.js + one Prisma query (GET /api/health)", r.oneQuery),
  ]);
  table("Ratios", [
    {
      ratio: "replay through the database / Next.js + one query",
      value: fmt(r.database.rps / r.oneQuery.rps, 2),
      target: 0.8,
    },
    { ratio: "replay from memory / Next.js without database", value: fmt(r.memory.rps / r.framework.rps, 2) },
    { ratio: "replay through the database / floor", value: fmt(r.database.rps / r.floor.rps, 3) },
  ]);
  if (r.database.failures + r.memory.failures > 0) process.exitCode = 1;
} finally {
  floor.close();
  await pool.end();
  await stack.stop();
}
process.exit(process.exitCode ?? 0);
