import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { env } from "~/env";
import { recordChargeAndComplete } from "~/server/charges/recordCharge";
import { CHARGES_ROUTE } from "~/server/charges/submitCharge";
import { deriveGatewayKey, gateway } from "~/server/gateway";
import { requestHash } from "~/server/idempotency/canonicalHash";
import { pruneExpired } from "~/server/sweep/pruneExpired";
import { reapAbandoned } from "~/server/sweep/reapAbandoned";
import { runSweep } from "~/server/sweep/runSweep";
import {
  chargeBody, closeConnections, db, gatewayCharges, localCharges, newApiClient, postCharge, uniqueKey,
  untilGatewayShowsCharge,
} from "./helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("sweep")));
after(closeConnections);

const MINUTE = 60_000;

/** What a process that died mid-request leaves behind: a locked in_progress record. */
async function orphanedRecord(body: ReturnType<typeof chargeBody>, ageMs = 10 * MINUTE) {
  const past = new Date(Date.now() - ageMs);
  return db.idempotentRequest.create({
    data: {
      idempotencyKey: uniqueKey("orphan"),
      route: CHARGES_ROUTE,
      apiClientId: clientId,
      requestHash: requestHash(body),
      state: "in_progress",
      lockedAt: past,
      createdAt: past,
      updatedAt: past,
      expiresAt: new Date(Date.now() + 24 * 60 * MINUTE),
    },
  });
}

describe("reaping abandoned requests", () => {
  test("never reached the gateway -> completed as 500 request_abandoned, replayed to the retry", async () => {
    const body = chargeBody();
    const record = await orphanedRecord(body);
    const result = await reapAbandoned({ olderThanMs: 5 * MINUTE });
    assert.ok(result.reaped >= 1);
    const after = await db.idempotentRequest.findUniqueOrThrow({ where: { id: record.id } });
    assert.equal(after.state, "complete");
    assert.equal(after.reapedAs, "abandoned");
    assert.equal(after.responseStatus, 500);
    const retry = await postCharge({ apiKey, key: record.idempotencyKey, body });
    assert.equal(retry.status, 500);
    assert.equal(retry.json.error.code, "request_abandoned");
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal((await gatewayCharges(body.customer_id)).length, 0);
  });

  test("the gateway had charged -> local charge written, completed with the real 201", async () => {
    const body = chargeBody();
    const record = await orphanedRecord(body);
    const gatewayKey = deriveGatewayKey(record);
    const charged = await gateway.charge(
      { amountCents: body.amount_cents, currency: body.currency, cardToken: body.card_token, customerId: body.customer_id, metadata: { requestId: String(record.id), apiClientId: String(clientId), idempotencyKey: record.idempotencyKey } },
      { idempotencyKey: gatewayKey, timeoutMs: 5_000 },
    );
    await untilGatewayShowsCharge(record); // the record says the charge is 10 minutes old
    const result = await reapAbandoned({ olderThanMs: 5 * MINUTE });
    assert.ok(result.reconciled >= 1);
    const after = await db.idempotentRequest.findUniqueOrThrow({ where: { id: record.id }, include: { charge: true } });
    assert.equal(after.state, "complete");
    assert.equal(after.reapedAs, "reconciled");
    assert.equal(after.responseStatus, 201);
    assert.equal(after.charge?.gatewayChargeId, charged.id);
    const retry = await postCharge({ apiKey, key: record.idempotencyKey, body });
    assert.equal(retry.status, 201);
    assert.equal(retry.json.gateway_charge_id, charged.id);
    assert.equal((await gatewayCharges(body.customer_id)).length, 1);
    assert.equal((await localCharges(body.customer_id)).length, 1);
  });

  test("a process finishing a record the sweeper already finished writes nothing and answers the stored response", async () => {
    const body = chargeBody();
    const record = await orphanedRecord(body);
    await reapAbandoned({ olderThanMs: 5 * MINUTE });
    const late = { id: `sim_late_${record.id}`, status: "succeeded" as const, amountCents: body.amount_cents, currency: body.currency, customerId: body.customer_id, declineCode: null, message: null };
    const answer = await recordChargeAndComplete(record, late, deriveGatewayKey(record));
    assert.equal(answer?.status, 500);
    assert.match(answer?.body ?? "", /request_abandoned/);
    assert.equal((await localCharges(body.customer_id)).length, 0, "no charge next to an abandoned record");
    const after = await db.idempotentRequest.findUniqueOrThrow({ where: { id: record.id } });
    assert.equal(after.reapedAs, "abandoned");
  });

  test("records younger than the threshold are left alone", async () => {
    const record = await orphanedRecord(chargeBody(), 1_000);
    await reapAbandoned({ olderThanMs: 5 * MINUTE });
    assert.equal((await db.idempotentRequest.findUniqueOrThrow({ where: { id: record.id } })).state, "in_progress");
    await db.idempotentRequest.delete({ where: { id: record.id } });
  });

  test("sweepers running at once finish each record exactly once", async () => {
    const bodies = Array.from({ length: 12 }, () => chargeBody());
    const records = await Promise.all(bodies.map((b) => orphanedRecord(b)));
    // Half of them had reached the gateway.
    for (const [i, record] of records.entries()) {
      if (i % 2 === 0) continue;
      const b = bodies[i]!;
      await gateway.charge(
        { amountCents: b.amount_cents, currency: b.currency, cardToken: b.card_token, customerId: b.customer_id, metadata: { requestId: String(record.id), apiClientId: String(clientId), idempotencyKey: record.idempotencyKey } },
        { idempotencyKey: deriveGatewayKey(record), timeoutMs: 5_000 },
      );
      await untilGatewayShowsCharge(record);
    }
    const results = await Promise.all([1, 2, 3, 4].map(() => reapAbandoned({ olderThanMs: 5 * MINUTE })));
    const reaped = results.reduce((n, r) => n + r.reaped, 0);
    const reconciled = results.reduce((n, r) => n + r.reconciled, 0);
    assert.equal(reaped, 6);
    assert.equal(reconciled, 6);
    for (const [i, b] of bodies.entries()) assert.equal((await localCharges(b.customer_id)).length, i % 2 === 0 ? 0 : 1);
  });

  // With a lagging lookup (GATEWAY=stripe) this fails today: findCharge gets the record's updated_at as
  // lastAttemptAt, and every lease bumps updated_at, so a sweep that runs more often than the consistency
  // window keeps answering "unproven" and never finishes the record. lastAttemptAt must be the time of the
  // last gateway call. Marked todo until the sweeper (src/server/sweep, the lead's rewrite) passes it.
  test(
    "a record the lookup could not prove yet is finished once the window has passed since its last attempt, " +
      "however often sweeps run",
    { todo: "the lease bumps updated_at, which findCharge gets as lastAttemptAt" },
    async () => {
      const body = chargeBody();
      const record = await orphanedRecord(body, 100); // its last attempt was just now, and it never charged
      const deadline = Date.now() + 3 * env.STRIPE_SEARCH_CONSISTENCY_MS + 1_000;
      try {
        while (Date.now() < deadline) {
          await reapAbandoned({ olderThanMs: 0 });
          const now = await db.idempotentRequest.findUniqueOrThrow({ where: { id: record.id } });
          if (now.state === "complete") break;
          await new Promise((r) => setTimeout(r, 100));
        }
        const after = await db.idempotentRequest.findUniqueOrThrow({ where: { id: record.id } });
        assert.equal(after.reapedAs, "abandoned");
      } finally {
        await db.idempotentRequest.delete({ where: { id: record.id } }); // not left in progress for later tests
      }
    },
  );

  test("runSweep records its run for the dashboard", async () => {
    await orphanedRecord(chargeBody());
    const run = await runSweep({ reapAfterMs: 5 * MINUTE });
    assert.ok(run.finishedAt);
    assert.equal(run.reaped, 1);
    assert.equal(run.error, null);
  });
});

describe("pruning expired records", () => {
  async function insertRecords(count: number, expiresAt: Date, prefix: string) {
    // One multi-row INSERT per 1000 rows keeps set-up fast.
    for (let start = 0; start < count; start += 1000) {
      const n = Math.min(1000, count - start);
      await db.idempotentRequest.createMany({
        data: Array.from({ length: n }, (_, i) => ({
          idempotencyKey: `${prefix}-${start + i}`,
          route: CHARGES_ROUTE,
          apiClientId: clientId,
          requestHash: "0".repeat(64),
          state: "complete" as const,
          responseStatus: 201,
          responseBody: "{}",
          expiresAt,
        })),
      });
    }
  }

  test("deletes expired records in batches, keeps live ones and the charges", async () => {
    const tag = uniqueKey("prune");
    const past = new Date(Date.now() - 60_000);
    await insertRecords(2_500, past, `${tag}-old`);
    await insertRecords(10, new Date(Date.now() + 3_600_000), `${tag}-live`);
    // An expired record with a charge: the charge must outlive it.
    const created = await postCharge({ apiKey, key: `${tag}-charged` });
    await db.idempotentRequest.updateMany({ where: { idempotencyKey: `${tag}-charged` }, data: { expiresAt: past } });

    const pruned = await pruneExpired({ batchSize: 1_000 });
    assert.ok(pruned >= 2_501, `pruned ${pruned}`);
    assert.equal(await db.idempotentRequest.count({ where: { idempotencyKey: { startsWith: `${tag}-old` } } }), 0);
    assert.equal(await db.idempotentRequest.count({ where: { idempotencyKey: { startsWith: `${tag}-live` } } }), 10);
    const charge = await db.charge.findUniqueOrThrow({ where: { id: created.json.id } });
    assert.equal(charge.idempotentRequestId, null);
  });

  test("a prune with a time budget stops early and leaves the rest to the next sweep", async () => {
    const tag = uniqueKey("budget");
    await insertRecords(2_000, new Date(Date.now() - 60_000), `${tag}-old`);
    const left = () => db.idempotentRequest.count({ where: { idempotencyKey: { startsWith: `${tag}-old` } } });

    const first = await pruneExpired({ batchSize: 100, budgetMs: 1 });
    assert.ok(first > 0 && first < 2_000, `pruned ${first} within the budget`);
    assert.ok((await left()) > 0, "the backlog is left for the next sweep");

    await pruneExpired({ batchSize: 1_000 });
    assert.equal(await left(), 0);
  });

  test("an expired key that has not been pruned yet names a new operation", async () => {
    const key = uniqueKey();
    const first = await postCharge({ apiKey, key });
    await db.idempotentRequest.updateMany({ where: { idempotencyKey: key }, data: { expiresAt: new Date(Date.now() - 1_000) } });
    const again = await postCharge({ apiKey, key });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get("idempotent-replay"), null);
    assert.notEqual(again.json.id, first.json.id);
  });

  test("EXPLAIN: the sweep and prune queries use their indexes, not a full scan", async () => {
    await insertRecords(3_000, new Date(Date.now() + 3_600_000), uniqueKey("explain"));
    await db.$executeRawUnsafe("ANALYZE TABLE idempotent_requests");
    const cutoff = new Date(Date.now() - 5 * MINUTE);
    const show = (row: object) => JSON.stringify(row, (_, v) => (typeof v === "bigint" ? Number(v) : v));
    const explain = async (sql: string) => (await db.$queryRawUnsafe<{ key: string | null; type: string }[]>(`EXPLAIN ${sql}`, cutoff))[0]!;

    const sweep = await explain(
      "SELECT id FROM idempotent_requests WHERE state = 'in_progress' AND updated_at < ? ORDER BY updated_at LIMIT 100",
    );
    assert.equal(sweep.key, "idempotent_requests_sweep_idx", show(sweep));
    assert.notEqual(sweep.type, "ALL");

    const prune = await explain("DELETE FROM idempotent_requests WHERE expires_at < ? ORDER BY expires_at LIMIT 1000");
    assert.equal(prune.key, "idempotent_requests_prune_idx", show(prune));
    assert.notEqual(prune.type, "ALL");
  });
});
