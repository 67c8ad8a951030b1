/**
 * `npm run bench:webhooks`: what events and webhooks cost the money path, and how soon a delivery arrives.
 * - Charge throughput of a client with one endpoint subscribed to every event against a client with none, in the
 *   same run (interleaved slices): the event and its delivery row are written in the charge's own transaction,
 *   and the dispatcher posts meanwhile on the same machine. Target: >= 0.9x.
 * - Delivery lag, from the event's commit to the receiver's 2xx, of every event of that load. Target: p99 <= 1 s.
 * The receiver answers 200 at once, in a process of its own (bench/webhookReceiver.ts); one dispatcher with the
 * defaults, as npm start runs it (WEBHOOK_CONCURRENCY 100, WEBHOOK_POLL_INTERVAL_MS 250).
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { startDispatcher } from "../scripts/lib/processes";
import { chargeRequest, fmt, interleaved, interleavedRow, startBenchStack, table } from "./lib";

const stack = await startBenchStack({ WEBHOOK_ALLOW_PRIVATE_URLS: "true" });
const dispatcher = startDispatcher(process.env as Record<string, string>, { quiet: true });
const receiver = spawn(process.execPath, ["--import", "tsx", "bench/webhookReceiver.ts"], {
  stdio: ["ignore", "pipe", "inherit"],
});
const [firstLine] = (await once(receiver.stdout!, "data")) as [Buffer];
const receiverUrl = `http://127.0.0.1:${Number(String(firstLine).trim())}`;
try {
  const { createApiClient } = await import("~/server/auth/apiClients");
  const { createEndpoint } = await import("~/server/webhooks/endpoints");
  const { cliContext } = await import("~/server/audit/audit");
  const { db } = await import("~/server/db");
  const subscribed = await createApiClient("bench webhooks");
  const url = `${receiverUrl}/hooks`;
  await createEndpoint(subscribed.client.id, { url, eventTypes: ["*"] }, cliContext("bench"));
  const runs = await interleaved({
    "no endpoint": { url: stack.url, requests: [chargeRequest(stack.apiKey, { key: randomUUID })], pid: stack.pid },
    "one endpoint, every event": {
      url: stack.url,
      requests: [chargeRequest(subscribed.apiKey, { key: randomUUID })],
      pid: stack.pid,
    },
  });
  table("Charges per second, the same run", [
    interleavedRow("no endpoint", runs["no endpoint"]),
    interleavedRow("one endpoint, every event", runs["one endpoint, every event"]),
  ]);
  const ratio = runs["one endpoint, every event"].rps / runs["no endpoint"].rps;
  // Every event of the subscribed client, delivered: its lag from its commit (created_at) to the 2xx.
  const deadline = Date.now() + 120_000;
  while ((await db.webhookDelivery.count({ where: { state: "pending" } })) > 0 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 500));
  const events = await db.event.findMany({
    where: { apiClientId: subscribed.client.id },
    select: { id: true, createdAt: true },
  });
  const receivedAt = new Map(Object.entries((await (await fetch(`${receiverUrl}/received`)).json()) as object));
  const lags = events
    .map((e) => (receivedAt.get(e.id) ?? Number.POSITIVE_INFINITY) - e.createdAt.getTime())
    .sort((a, b) => a - b);
  const at = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] ?? Number.NaN;
  const missing = lags.filter((l) => !Number.isFinite(l)).length;
  table("Delivery lag, commit to the receiver's 2xx (ms)", [
    { events: events.length, undelivered: missing, p50: fmt(at(0.5)), p99: fmt(at(0.99)), max: fmt(lags.at(-1) ?? 0) },
  ]);
  const verdict = ratio >= 0.9 && at(0.99) <= 1_000 && missing === 0;
  console.log(
    `\nthroughput with an endpoint: ${fmt(ratio, 2)}x without (target >= 0.9); lag p99 ${fmt(at(0.99))} ms ` +
      `(target <= 1000); undelivered ${missing}: ${verdict ? "MET" : "MISSED"}`,
  );
} finally {
  receiver.kill();
  await dispatcher.stop();
  await stack.stop();
}
process.exit(0);
