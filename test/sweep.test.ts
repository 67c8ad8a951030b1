import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { keyToBytes } from "~/server/idempotency/reading";
import { unfinishedStatement } from "~/server/idempotency/queries";
import { writeOffAt } from "~/server/operations/finality";
import { pruneBatchStatement } from "~/server/idempotency/records";
import { pruneExpired } from "~/server/sweep/pruneExpired";
import { reapAbandoned } from "~/server/sweep/reapAbandoned";
import { runSweep } from "~/server/sweep/runSweep";
import { env } from "~/env";
import {
  chargeAtGateway,
  chargeBody,
  closeConnections,
  db,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  recordOf,
  removeGatewayCharges,
  seedRecord,
  startAppInstance,
  uniqueKey,
  untilGatewayShowsCharge,
  waitFor,
} from "./helpers";
import { delayingProxy } from "./delayingProxy";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("sweep")));
after(closeConnections);

const MINUTE = 60_000;

/** What a process that died mid-request leaves behind: an in-progress record whose lease ran out. */
const orphanedRecord = (body: ReturnType<typeof chargeBody>, ageMs = 10 * MINUTE) =>
  seedRecord({ apiClientId: clientId, phase: "lease_expired", body, ageMs });

describe("reaping abandoned requests", () => {
  test("never reached the gateway -> completed as 500 request_abandoned, replayed to the retry", async () => {
    const body = chargeBody();
    const record = await orphanedRecord(body);
    const result = await reapAbandoned({ olderThanMs: 5 * MINUTE });
    assert.ok(result.reaped >= 1);
    const done = await recordOf(record.idempotencyKey!);
    assert.equal(done?.phase.name === "complete" && done.phase.finishedBy, "abandoned");
    assert.equal(done?.phase.name === "complete" && done.phase.response.status, 500);
    assert.equal(done?.attempt, 2, "taken over under the next attempt");
    const retry = await postCharge({ apiKey, key: record.idempotencyKey!, body });
    assert.equal(retry.status, 500);
    assert.equal(retry.json.error.code, "request_abandoned");
    assert.equal(retry.json.error.gateway, "no_trace", "the gateway has no trace of it, and the answer says so");
    assert.match(retry.json.error.message, /no trace/);
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal((await gatewayCharges(body.customer_id)).length, 0);
  });

  test("the gateway had charged -> local charge written, completed with the real 201", async () => {
    const body = chargeBody();
    const record = await orphanedRecord(body);
    const charged = await chargeAtGateway(record, body);
    await untilGatewayShowsCharge(record); // the record says the charge is 10 minutes old
    const result = await reapAbandoned({ olderThanMs: 5 * MINUTE });
    assert.ok(result.reconciled >= 1);
    const done = await recordOf(record.idempotencyKey!);
    assert.equal(done?.phase.name === "complete" && done.phase.finishedBy, "reconciled");
    assert.equal(done?.phase.name === "complete" && done.phase.response.status, 201);
    const [charge] = await localCharges(body.customer_id);
    assert.equal(charge?.gatewayChargeId, charged.id);
    assert.equal(charge?.idempotentRequestId, record.id);
    const retry = await postCharge({ apiKey, key: record.idempotencyKey!, body });
    assert.equal(retry.status, 201);
    assert.equal(retry.json.gateway_charge_id, charged.id);
    assert.equal((await gatewayCharges(body.customer_id)).length, 1);
    assert.equal((await localCharges(body.customer_id)).length, 1);
  });

  test("a released claim nobody retried is finished the same way (the keyless ones too)", async () => {
    const keyed = chargeBody();
    const keyless = chargeBody();
    const released = await seedRecord({ apiClientId: clientId, phase: "released", body: keyed });
    const anonymous = await seedRecord({ apiClientId: clientId, phase: "released", body: keyless, key: null });
    await chargeAtGateway(released, keyed);
    await chargeAtGateway(anonymous, keyless);
    await untilGatewayShowsCharge(released);
    await untilGatewayShowsCharge(anonymous);
    await reapAbandoned({ olderThanMs: 5 * MINUTE });
    for (const body of [keyed, keyless]) {
      assert.equal((await localCharges(body.customer_id)).length, 1);
      assert.equal((await gatewayCharges(body.customer_id)).length, 1);
    }
  });

  test("records younger than the threshold, and records under a live lease, are left alone", async () => {
    const young = await orphanedRecord(chargeBody(), 1_000);
    const held = await seedRecord({ apiClientId: clientId, phase: "held", body: chargeBody(), ageMs: 10 * MINUTE });
    await reapAbandoned({ olderThanMs: 5 * MINUTE });
    assert.equal((await recordOf(young.idempotencyKey!))?.phase.name, "lease_expired");
    assert.equal((await recordOf(held.idempotencyKey!))?.phase.name, "held");
    await db.idempotentRequest.deleteMany({ where: { id: { in: [young.id, held.id] } } });
  });

  test("sweepers running at once finish each record exactly once, and count only what they finished", async () => {
    const bodies = Array.from({ length: 12 }, () => chargeBody());
    const records = await Promise.all(bodies.map((b) => orphanedRecord(b)));
    // Half of them had reached the gateway.
    for (const [i, record] of records.entries()) {
      if (i % 2 === 0) continue;
      await chargeAtGateway(record, bodies[i]!);
      await untilGatewayShowsCharge(record);
    }
    const results = await Promise.all([1, 2, 3, 4].map(() => reapAbandoned({ olderThanMs: 5 * MINUTE })));
    const reaped = results.reduce((n, r) => n + r.reaped, 0);
    const reconciled = results.reduce((n, r) => n + r.reconciled, 0);
    assert.equal(reaped, 6);
    assert.equal(reconciled, 6);
    for (const [i, b] of bodies.entries())
      assert.equal((await localCharges(b.customer_id)).length, i % 2 === 0 ? 0 : 1);
  });

  test("a record the lookup cannot prove yet is finished when its window ends, however often sweeps run", async () => {
    // A lookup that lags (Stripe's search) answers "unproven" for a while after the last attempt. The
    // sweeper's own take-overs must not move that attempt time, or frequent sweeps would never finish it.
    const body = chargeBody();
    const record = await seedRecord({ apiClientId: clientId, phase: "lease_expired", body, ageMs: 100 });
    // Until its last attempt can no longer land (operations/finality.ts), then at the next sweep.
    const deadline = writeOffAt(record, 0).getTime() + 2 * env.STRIPE_SEARCH_CONSISTENCY_MS + 2_000;
    while (Date.now() < deadline && (await recordOf(record.idempotencyKey!))?.phase.name !== "complete") {
      await reapAbandoned({ olderThanMs: 0 });
      await new Promise((r) => setTimeout(r, 100));
    }
    const done = await recordOf(record.idempotencyKey!);
    assert.equal(done?.phase.name === "complete" && done.phase.finishedBy, "abandoned");
    assert.equal(done?.lastAttemptAt.getTime(), record.lastAttemptAt.getTime(), "the sweeper never moved it");
  });

  test("a record in an impossible state does not stop the sweep from finishing the others", async () => {
    // In progress with a stored outcome: no transition produces that (a hand edit, a bad restore). It is the
    // oldest, so it heads every batch.
    const bad = await seedRecord({ apiClientId: clientId, phase: "released", ageMs: 3_600_000 });
    await db.idempotentRequest.update({ where: { id: bad.id }, data: { finishedBy: "abandoned" } });
    const good = await seedRecord({ apiClientId: clientId, phase: "released", body: chargeBody(), ageMs: 600_000 });
    try {
      await reapAbandoned({ olderThanMs: 0 });
      assert.equal((await recordOf(good.idempotencyKey!))?.phase.name, "complete");
    } finally {
      await db.idempotentRequest.delete({ where: { id: bad.id } });
    }
  });

  test("runSweep records its run for the dashboard", async () => {
    await orphanedRecord(chargeBody());
    const run = await runSweep({ reapAfterMs: 5 * MINUTE });
    assert.ok(run.finishedAt);
    assert.equal(run.reaped, 1);
    assert.equal(run.error, null);
  });
});

/** Records whose key starts with `prefix` (a prefix of a VARBINARY key is a byte-wise LIKE). */
async function countWithPrefix(prefix: string): Promise<number> {
  const rows = await db.$queryRawUnsafe<{ n: bigint }[]>(
    "SELECT COUNT(*) AS n FROM idempotent_requests WHERE idempotency_key LIKE ?",
    `${prefix.replace(/[\\%_]/g, "\\$&")}%`,
  );
  return Number(rows[0]!.n);
}

describe("pruning expired records", () => {
  /** Complete records with no charge behind them: on a route of their own, so the ledger checks leave them be. */
  async function insertRecords(count: number, expiresAt: Date, prefix: string) {
    // One multi-row INSERT per 1000 rows keeps set-up fast.
    for (let start = 0; start < count; start += 1000) {
      const n = Math.min(1000, count - start);
      await db.idempotentRequest.createMany({
        data: Array.from({ length: n }, (_, i) => ({
          idempotencyKey: keyToBytes(`${prefix}-${start + i}`),
          route: "POST /test/prune",
          apiClientId: clientId,
          requestHash: "0".repeat(64),
          state: "complete" as const,
          responseStatus: 201,
          responseBody: "{}",
          finishedBy: "request" as const,
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
    await db.idempotentRequest.updateMany({
      where: { idempotencyKey: keyToBytes(`${tag}-charged`) },
      data: { expiresAt: past },
    });

    const pruned = await pruneExpired({ batchSize: 1_000 });
    assert.ok(pruned >= 2_501, `pruned ${pruned}`);
    assert.equal(await countWithPrefix(`${tag}-old`), 0);
    assert.equal(await countWithPrefix(`${tag}-live`), 10);
    const charge = await db.charge.findUniqueOrThrow({ where: { id: created.json.id } });
    assert.equal(charge.idempotentRequestId, null);
  });

  test("a prune with a time budget stops early and leaves the rest to the next sweep", async () => {
    const tag = uniqueKey("budget");
    await insertRecords(2_000, new Date(Date.now() - 60_000), `${tag}-old`);
    const left = () => countWithPrefix(`${tag}-old`);

    const first = await pruneExpired({ batchSize: 100, budgetMs: 1 });
    assert.ok(first > 0 && first < 2_000, `pruned ${first} within the budget`);
    assert.ok((await left()) > 0, "the backlog is left for the next sweep");

    await pruneExpired({ batchSize: 1_000 });
    assert.equal(await left(), 0);
  });

  test("an expired key that has not been pruned yet names a new operation", async () => {
    const key = uniqueKey();
    const first = await postCharge({ apiKey, key });
    await db.idempotentRequest.updateMany({
      where: { idempotencyKey: keyToBytes(key) },
      data: { expiresAt: new Date(Date.now() - 1_000) },
    });
    const again = await postCharge({ apiKey, key });
    assert.equal(again.status, 201);
    assert.equal(again.headers.get("idempotent-replay"), null);
    assert.notEqual(again.json.id, first.json.id);
  });

  test("EXPLAIN: the sweep and prune queries use their indexes, not a full scan", async () => {
    await insertRecords(3_000, new Date(Date.now() + 3_600_000), uniqueKey("explain"));
    await db.$executeRawUnsafe("ANALYZE TABLE idempotent_requests");
    const show = (row: object) => JSON.stringify(row, (_, v) => (typeof v === "bigint" ? Number(v) : v));
    type Plan = { table: string; key: string | null; type: string };
    const explain = async ({ sql, values }: { sql: string; values: unknown[] }) =>
      await db.$queryRawUnsafe<Plan[]>(`EXPLAIN ${sql}`, ...values);

    // The statements themselves, as the sweeper and the pruner send them.
    const [sweep] = await explain(unfinishedStatement(5 * MINUTE, 100));
    // Along the sweep index (the in-progress records), perhaps with a row filter from another index beside it.
    assert.equal(sweep!.key?.split("|")[0], "idempotent_requests_sweep_idx", show(sweep!));
    assert.notEqual(sweep!.type, "ALL");

    // The batch through the prune index, then each of its rows by primary key; no table read whole.
    const prune = await explain(pruneBatchStatement(1000));
    const onTable = prune.filter((p) => !p.table.startsWith("<derived"));
    assert.deepEqual(
      onTable.map((p) => [p.table, p.key]),
      [
        ["r", "PRIMARY"],
        ["idempotent_requests", "idempotent_requests_prune_idx"],
      ],
      show(prune),
    );
    assert.ok(
      onTable.every((p) => p.type !== "ALL"),
      show(prune),
    );
  });
});

/**
 * FINDING: a sweeper whose clock runs ahead (by more than REAP_AFTER_MS, less
 * the age of the claim) takes over a LIVE claim, asks the gateway before the
 * holder's charge exists there, and abandons the operation; the holder then gets
 * the gateway's charge, loses the fence, drops the charge it holds in hand and
 * answers the replay: 500 request_abandoned. The money moved; the app has no
 * charge row.
 *
 * Leases and idleness are compared with each process's own clock
 * (`new Date()` in lifecycle.ts's statements): a lease protects its holder only
 * from instances whose clocks agree with its own. A retry on a skewed instance
 * is harmless (it charges again under the same derived key); the sweeper's
 * abandonment is not. The gateway here takes 1.5 s before the charge exists
 * (card network authorisation; the simulator makes its row before the wait, so
 * a TCP hop holds the request for that long).
 *
 * Second half of the same finding: a holder that lost the fence while holding
 * a DEFINITE gateway charge throws it away (runIdempotent.currentAnswer) even
 * when the winner stored "abandoned"; it should record the charge (or at least
 * a mismatch) instead.
 */
describe("a sweeper on a skewed clock", () => {
  const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 16;
  const GATEWAY_PORT = Number(process.env.TEST_GATEWAY_PORT);

  /** This process's clock, `ms` ahead, until the returned function puts it back. */
  function skewClock(ms: number): () => void {
    const RealDate = Date;
    class SkewedDate extends RealDate {
      constructor(...args: unknown[]) {
        if (args.length === 0) super(RealDate.now() + ms);
        else super(...(args as [string]));
      }
      static override now() {
        return RealDate.now() + ms;
      }
    }
    globalThis.Date = SkewedDate as DateConstructor;
    return () => {
      globalThis.Date = RealDate;
    };
  }

  let apiKey: string;
  before(async () => ({ apiKey } = await newApiClient("review skewed sweeper")));

  describe("a sweeper whose clock is ahead", () => {
    test("does not abandon a claim whose holder is still at the gateway", { timeout: 60_000 }, async () => {
      const proxy = await delayingProxy(GATEWAY_PORT);
      const app = await startAppInstance(PORT, { GATEWAY_URL: proxy.url, STRIPE_API_BASE: proxy.url });
      const body = chargeBody();
      const key = uniqueKey("skew");
      try {
        const answer = postCharge({ apiKey, key, body, baseUrl: `http://127.0.0.1:${PORT}` });
        await waitFor("the request at the gateway", async () => proxy.heldRequests() === 1);
        assert.equal((await recordOf(key))?.phase.name, "held", "the holder is alive and its lease runs");

        // A sweeper on a host whose clock is REAP_AFTER_MS + 1 s ahead.
        const restore = skewClock(env.REAP_AFTER_MS + 1_000);
        let swept: Awaited<ReturnType<typeof reapAbandoned>>;
        try {
          swept = await reapAbandoned();
        } finally {
          restore();
        }
        const after = (await recordOf(key))!;
        console.log(`skewed sweep: ${JSON.stringify(swept)}; record ${JSON.stringify(after.phase)}`);

        // The gateway's charge comes into being and its answer reaches the holder, within its timeout.
        await proxy.deliver({ answerTheApp: true });
        const res = await answer;
        const atGateway = await gatewayCharges(body.customer_id);
        const inApp = await localCharges(body.customer_id);
        console.log(
          `client told ${res.status} ${res.json?.error?.code ?? ""}; gateway charges ${atGateway.length}, ` +
            `app charges ${inApp.length}`,
        );
        try {
          assert.equal(after.phase.name, "held", "a live claim is not the sweeper's to finish");
          assert.equal(res.status, 201, res.text);
        } finally {
          if (inApp.length === 0) {
            await removeGatewayCharges(atGateway.map((c) => c.id));
            await db.ledgerMismatch.updateMany({
              where: { gatewayChargeId: { in: atGateway.map((c) => c.id) } },
              data: { resolvedAt: new Date() },
            });
          }
        }
      } finally {
        await app.stop();
        proxy.close();
      }
    });
  });
});
