import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  chargeBody,
  closeConnections,
  metricSample,
  newApiClient,
  postCharge,
  scrapeMetrics,
  uniqueKey,
  waitFor,
} from "./helpers";

const TOKEN = process.env.METRICS_TOKEN!;

const answers = (text: string, outcome: string, status: string) =>
  metricSample(text, "charges_answers_total", { route: "POST /api/charges", outcome, status });

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("metrics")));
after(closeConnections);

describe("GET /api/metrics", () => {
  test("needs the bearer token: none, a wrong one or a longer one -> 401 (and no metric is shown)", async () => {
    const wrong = [undefined, `Bearer ${"x".repeat(TOKEN.length)}`, `Bearer ${TOKEN}x`, `Basic ${TOKEN}`];
    for (const authorization of wrong) {
      const res = await scrapeMetrics(authorization);
      assert.equal(res.status, 401, String(authorization));
      assert.doesNotMatch(res.text, /charges_answers_total/);
    }
  });

  test("answers by outcome: fresh, replay, 409, 422 and 400 each counted once", async () => {
    const before = (await scrapeMetrics(`Bearer ${TOKEN}`)).text;
    const key = uniqueKey("metrics");
    const body = chargeBody({ card_token: "tok_slow_1500" });
    const first = postCharge({ apiKey, key, body });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await postCharge({ apiKey, key, body })).status, 409);
    assert.equal((await first).status, 201);
    assert.equal((await postCharge({ apiKey, key, body })).status, 201);
    assert.equal((await postCharge({ apiKey, key, body: { ...body, amount_cents: 1 } })).status, 422);
    assert.equal((await postCharge({ apiKey, key: uniqueKey(), body: { amount_cents: "x" } })).status, 400);

    const res = await scrapeMetrics(`Bearer ${TOKEN}`);
    assert.equal(res.status, 200);
    assert.match(res.type, /^text\/plain; version=0\.0\.4/);
    const delta = (outcome: string, status: string) =>
      answers(res.text, outcome, status) - answers(before, outcome, status);
    assert.equal(delta("fresh", "201"), 1);
    assert.equal(delta("replay", "201"), 1);
    assert.equal(delta("in_progress", "409"), 1);
    assert.equal(delta("idempotency_key_reused", "422"), 1);
    assert.equal(delta("invalid_request", "400"), 1);
    assert.ok(
      answers(res.text, "service_unavailable", "503") === 0 && res.text.includes('outcome="service_unavailable"'),
      "503 shown at 0",
    );
  });

  test("claim and gateway latency histograms, the pool, the sweeper, the ledger and the runtime", async () => {
    await postCharge({ apiKey, key: uniqueKey(), body: chargeBody() });
    const { text } = await scrapeMetrics(`Bearer ${TOKEN}`);
    assert.ok(metricSample(text, "charges_idempotency_claim_seconds_count", { result: "claimed" }) > 0);
    assert.ok(metricSample(text, "charges_gateway_call_seconds_count", { result: "charged" }) > 0);
    assert.ok(metricSample(text, "charges_gateway_call_seconds_bucket", { result: "charged", le: "+Inf" }) > 0);
    assert.equal(metricSample(text, "charges_db_pool_limit"), Number(process.env.DATABASE_POOL_SIZE));
    for (const name of [
      "charges_db_pool_connections_in_use",
      "charges_sweeper_last_run_timestamp_seconds",
      "charges_sweeper_failures_last_hour",
      "charges_ledger_open_mismatches",
      "charges_ledger_last_reconciliation_timestamp_seconds",
      "charges_nodejs_eventloop_lag_p99_seconds",
    ]) {
      assert.match(text, new RegExp(`^${name} `, "m"), name);
    }
    for (const result of ["reaped", "reconciled", "pruned"]) {
      assert.match(text, new RegExp(`^charges_sweeper_records_last_hour\\{result="${result}"\\} `, "m"), result);
    }
  });

  test("keyless share per client over the last 24 h", async () => {
    assert.equal((await postCharge({ apiKey, body: chargeBody() })).status, 201);
    // Keyed counts reach the database within a second (rollout/counters.ts).
    await waitFor("the client's keyless share", async () => {
      const { text } = await scrapeMetrics(`Bearer ${TOKEN}`);
      const share = metricSample(text, "charges_keyless_share", { client_id: String(clientId) });
      // Keyed so far in this file: 6 (fresh, 409, replay, 422, 400 and one more); keyless: 1.
      return share > 0 && share < 0.5 && share;
    });
  });
});
