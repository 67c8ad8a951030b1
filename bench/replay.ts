/**
 * Replay path: replays per second through the app vs the floor for this stack,
 * a minimal node:http + mariadb server doing the same indexed lookup.
 */
import { createServer } from "node:http";
import * as mariadb from "mariadb";
import { connectionOptions } from "../scripts/lib/mariadbServer";
import { chargeRequest, fmt, load, startBenchStack, table } from "./lib";

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
  table("Replays of one finished request (20 connections, 8 s each)", [
    { server: "node:http + mariadb (floor)", "req/s": fmt(base.rps), "p50 ms": base.p50, "p99 ms": base.p99 },
    { server: "Charges (Next.js + Prisma)", "req/s": fmt(app.rps), "p50 ms": app.p50, "p99 ms": app.p99, non2xx: app.non2xx },
    { server: "Charges / floor", "req/s": fmt(app.rps / base.rps, 2), "p50 ms": fmt(app.p50 / Math.max(base.p50, 0.5), 2), "p99 ms": fmt(app.p99 / Math.max(base.p99, 0.5), 2) },
  ]);
} finally {
  floor.close();
  await pool.end();
  await stack.stop();
}
process.exit(0);
