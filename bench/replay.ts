/**
 * Replay path: replays per second through the app vs the floor for this stack,
 * a minimal node:http + mariadb server doing the same indexed lookup.
 */
import { createServer } from "node:http";
import * as mariadb from "mariadb";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { chargeRequest, fmt, load, startBenchStack, table, type Load } from "./lib";

const stack = await startBenchStack();
const pool = mariadb.createPool({ ...connectionOptions(stack.databaseUrl, true), connectionLimit: 10 });
const floor = createServer((req, res) => {
  const key = String(req.headers["idempotency-key"]);
  pool
    .query("SELECT response_status, response_body FROM idempotent_requests WHERE idempotency_key = ? AND route = ?", [key, "POST /api/charges"])
    .then((rows) => {
      res.writeHead(rows[0]?.response_status ?? 404, { "Content-Type": "application/json", "Idempotent-Replay": "true" });
      res.end(rows[0]?.response_body ?? "{}");
    })
    .catch(() => res.writeHead(503).end());
});
await new Promise<void>((r) => floor.listen(3299, "127.0.0.1", r));
try {
  const first = await fetch(`${stack.url}/api/charges`, {
    method: "POST",
    headers: { Authorization: `Bearer ${stack.apiKey}`, "Content-Type": "application/json", "Idempotency-Key": "replay-me" },
    body: chargeRequest(stack.apiKey).body,
  });
  if (first.status !== 201) throw new Error(`set-up charge failed: ${first.status}`);
  const replay = chargeRequest(stack.apiKey, { key: () => "replay-me" });
  await load({ url: stack.url, duration: 3, requests: [replay] });
  const app = await load({ url: stack.url, requests: [replay] });
  const base = await load({ url: "http://127.0.0.1:3299", requests: [replay] });
  // Where the difference goes: the same route module answering without the
  // database (GET /api/charges is a 405), and one Prisma query (/api/health).
  const framework = await load({ url: `${stack.url}/api/charges` });
  const oneQuery = await load({ url: `${stack.url}/api/health` });
  const row = (server: string, r: Load) => ({ server, "req/s": fmt(r.rps), "p50 ms": r.p50, "p99 ms": r.p99, "vs floor": fmt(r.rps / base.rps, 3) });
  table("Replays of one finished request (20 connections, 8 s each)", [
    row("node:http + mariadb, same indexed lookup (floor)", base),
    row("Charges: replay (auth, claim INSERT, read)", app),
    row("reference: Next.js route, no database (GET /api/charges, 405)", framework),
    row("reference: Next.js + one Prisma query (GET /api/health)", oneQuery),
  ]);
  console.log(`replay / floor: ${fmt(app.rps / base.rps, 3)}; replay / Next.js without database: ${fmt(app.rps / framework.rps, 2)}`);
  if (app.non2xx > 0 || app.errors > 0) process.exitCode = 1;
} finally {
  floor.close();
  await pool.end();
  await stack.stop();
}
process.exit(process.exitCode ?? 0);
