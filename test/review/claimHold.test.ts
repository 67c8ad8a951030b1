/**
 * A keyed refund's hold made in its claim's transaction (205deac), probed by an independent review: a claim whose
 * charge is locked elsewhere must not leave its record invisible while it waits (it is made alone, the work holds),
 * races on one charge stay within it, and a wait past the whole lease still refunds once.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import {
  APP_URL,
  closeConnections,
  db,
  metricSample,
  refundedOf,
  newApiClient,
  newCharge,
  postRefund,
  recordsWithKey,
  scrapeMetrics,
  uniqueKey,
} from "../helpers";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("claimhold")));
after(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const METRICS = `Bearer ${process.env.METRICS_TOKEN}`;
const CONFLICTS = "charges_idempotency_claim_conflicts_total";

/** What was refunded of a charge, and what its hold rows still hold. */
async function totals(chargeId: string) {
  const holds = await db.refundHold.findMany({ where: { chargeId } });
  return { ...(await refundedOf(chargeId)), holdRows: holds.reduce((s, h) => s + h.amountCents, 0) };
}

describe("a keyed refund whose claim waits on its charge's row lock", () => {
  test("its operation is visible, and a same-key retry is answered 409 at once, as before the change", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const key = uniqueKey("locked");
    const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
    let first: Promise<unknown> | undefined;
    const conflictsBefore = metricSample((await scrapeMetrics(METRICS)).text, CONFLICTS);
    let conflictsAfter = conflictsBefore;
    try {
      await outside.query("BEGIN");
      await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
      first = postRefund({ apiKey, key, body: { charge, amount_cents: 100 } });
      await sleep(1_000);
      const visible = await recordsWithKey(key);
      conflictsAfter = metricSample((await scrapeMetrics(METRICS)).text, CONFLICTS);
      const lookup = await fetch(`${APP_URL}/api/refunds?idempotency_key=${encodeURIComponent(key)}`, {
        headers: { Authorization: `Bearer ${apiKey}` },
      });
      const started = Date.now();
      const retry = await postRefund({
        apiKey,
        key,
        body: { charge, amount_cents: 100 },
        signal: AbortSignal.timeout(3_000),
      }).catch((e: unknown) => ({ status: `no answer in ${Date.now() - started} ms (${String(e)})` }));
      assert.deepEqual(
        { visible, lookup: lookup.status, retry: retry.status },
        { visible: 1, lookup: 409, retry: 409 },
        "while the hold waits for the charge, the record is visible and a retry is answered 409",
      );
      assert.ok(conflictsAfter > conflictsBefore, "the claim-and-hold that met the lock counts as a claim conflict");
    } finally {
      await outside.query("ROLLBACK").catch(() => {});
      await outside.end();
      await first;
    }
  });
});

describe("a keyed refund that cannot be made, whose claim met its charge locked", () => {
  test("another client's charge: made alone, it is answered 404 once the lock lets go, never a 5xx", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const stranger = await newApiClient("claimhold stranger");
    const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
    let answer: ReturnType<typeof postRefund> | undefined;
    try {
      await outside.query("BEGIN");
      await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
      answer = postRefund({ apiKey: stranger.apiKey, key: uniqueKey("stranger"), body: { charge, amount_cents: 100 } });
      await sleep(1_000);
    } finally {
      await outside.query("ROLLBACK").catch(() => {});
      await outside.end();
    }
    const res = await answer!;
    assert.deepEqual([res.status, res.json?.error?.code], [404, "not_found"], res.text);
    const t = await totals(charge);
    assert.deepEqual([t.refunded, t.held, t.holdRows, t.gatewayCount], [0, 0, 0, 0], JSON.stringify(t));
  });
});

describe("races on one charge", () => {
  test("60 refunds, 30 keys each sent twice at once, amounts 1..30: within the charge, 1:1, no 5xx", async () => {
    for (let round = 0; round < 3; round++) {
      const charge = await newCharge(apiKey, { amount_cents: 200 });
      const keys = Array.from({ length: 30 }, (_, i) => ({ key: uniqueKey("race"), amount: i + 1 }));
      const answers = await Promise.all(
        keys.flatMap(({ key, amount }) =>
          [0, 1].map(() =>
            postRefund({
              apiKey,
              key,
              body: { charge, amount_cents: amount },
              headers: amount % 2 ? { Prefer: "wait=5" } : {},
            }),
          ),
        ),
      );
      const bad = answers.filter((a) => a.status >= 500);
      assert.deepEqual(
        bad.map((a) => a.text),
        [],
      );
      const t = await totals(charge);
      assert.ok(t.refunded + t.held <= t.charged, JSON.stringify(t));
      assert.equal(t.held, 0, JSON.stringify(t));
      assert.equal(t.holdRows, 0, JSON.stringify(t));
      assert.equal(t.appSum, t.refunded, JSON.stringify(t));
      assert.equal(t.gatewaySum, t.appSum, JSON.stringify(t));
      assert.equal(t.gatewayCount, t.appCount, JSON.stringify(t));
    }
  });
});

describe("a claim that waits on its charge past its whole lease", () => {
  test("same-key retries queued behind it, then one more: one gateway refund, 1:1, nothing held", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 500 });
    const key = uniqueKey("longwait");
    const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
    const body = { charge, amount_cents: 200 };
    let sent: Promise<{ status: number; text: string }>[] = [];
    try {
      await outside.query("BEGIN");
      await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
      sent.push(postRefund({ apiKey, key, body }));
      await sleep(300);
      sent = sent.concat([0, 1, 2].map(() => postRefund({ apiKey, key, body, headers: { Prefer: "wait=10" } })));
      await sleep(13_500); // the lease is GATEWAY_TIMEOUT_MS + LEASE_MARGIN_MS = 12 s, started at the INSERT
    } finally {
      await outside.query("ROLLBACK").catch(() => {});
      await outside.end();
    }
    const answers = await Promise.all(sent);
    // Whoever did not get the refund's answer retries, as the SDK does after a 503 or a 409: it ends once.
    if (!answers.some((a) => a.status === 201)) {
      const retry = await postRefund({ apiKey, key, body, headers: { Prefer: "wait=10" } });
      answers.push(retry);
      assert.equal(retry.status, 201, retry.text);
    }
    const t = await totals(charge);
    assert.deepEqual(
      { refunded: t.refunded, held: t.held, holdRows: t.holdRows, app: t.appCount, gateway: t.gatewayCount },
      { refunded: 200, held: 0, holdRows: 0, app: 1, gateway: 1 },
      answers.map((a) => `${a.status} ${a.text.slice(0, 120)}`).join("\n"),
    );
    assert.ok(
      answers.every((a) => [201, 409, 503].includes(a.status)),
      answers.map((a) => a.status).join(","),
    );
  });
});
