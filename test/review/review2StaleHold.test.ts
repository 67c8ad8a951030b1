/**
 * Review of 9178858 (a refusal found by the work's hold withdraws its record). Its safety argument: a work that
 * finds no own hold and cannot hold shows that no attempt called the gateway, since every attempt holds before it
 * calls and holds end only with the record's completion. But the work's hold (holds.ts, HOLD_SQL) is not fenced
 * on the record: an attempt that waited on its charge's row lock past its lease holds AFTER its record was
 * finished (or withdrawn) by someone else, and that hold is never ended. Fixed: the hold reads the record under a
 * share lock first (idempotency's attemptFence) and holds nothing once it is not this attempt's.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { env } from "~/env";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { gateway } from "~/server/gateway";
import {
  closeConnections,
  db,
  newApiClient,
  newCharge,
  postRefund,
  refundedOf,
  startAppInstance,
  uniqueKey,
} from "../helpers";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("review2 stale hold")));
after(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE_MS = env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS;
const OTHER_PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 7;
const bigints = (_k: string, v: unknown) => (typeof v === "bigint" ? String(v) : v);

describe("a keyed refund whose work waited on its charge's lock past its lease", () => {
  test("written off by the sweeper meanwhile: it holds nothing, and nothing is left held", async () => {
    const { reapAbandoned } = await import("~/server/sweep/reapAbandoned");
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const key = uniqueKey("stale-hold");
    const body = { charge, amount_cents: 200 };
    const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
    let first: Awaited<ReturnType<typeof postRefund>>;
    try {
      await outside.query("BEGIN");
      await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
      const sent = postRefund({ apiKey, key, body });
      // The claim (made alone) waits in its work's hold; its lease ends, and nothing it sent can still land.
      await sleep(LEASE_MS + gateway.lateLandingMs + 1_000);
      await reapAbandoned({ olderThanMs: 0 }); // what the sweeper does once the record is due
      await outside.query("ROLLBACK");
      first = await sent;
    } finally {
      await outside.query("ROLLBACK").catch(() => {});
      await outside.end();
    }
    const retry = await postRefund({ apiKey, key, body });
    await reapAbandoned({ olderThanMs: 0 });
    const t = await refundedOf(charge);
    const holds = await db.refundHold.findMany({ where: { chargeId: charge } });
    const records = await db.idempotentRequest.findMany({
      where: { id: { in: holds.map((h) => h.idempotentRequestId) } },
      select: { id: true, state: true, finishedBy: true },
    });
    assert.deepEqual(
      { refunded: t.refunded, held: t.held, holdRows: holds.length, gateway: t.gatewayCount },
      { refunded: 0, held: 0, holdRows: 0, gateway: 0 },
      `first: ${first.status} ${first.text}\nretry: ${retry.status} ${retry.text}\n` +
        `hold rows' records: ${JSON.stringify(records, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`,
    );
  });
});

describe("a keyed refund withdrawn by a take-over while its first attempt still waits on the charge's lock", () => {
  test("the first attempt holds nothing for a record withdrawn meanwhile, and nothing is left held", async () => {
    // The first attempt waits in its work's hold (innodb_lock_wait_timeout, 50 s) and is retried behind the
    // take-over (retryOnLockConflict); between them the sweeper gives back another refund's hold. The take-over
    // finds nothing left and withdraws; the first attempt then finds room and holds for the withdrawn record.
    const { reapAbandoned } = await import("~/server/sweep/reapAbandoned");
    const other = await startAppInstance(OTHER_PORT);
    try {
      const charge = await newCharge(apiKey, { amount_cents: 1000, card_token: "tok_refund_error" });
      const lost = await postRefund({ apiKey, key: uniqueKey("lost"), body: { charge, amount_cents: 1000 } });
      assert.equal(lost.status, 503, lost.text); // outcome unknown: released, its hold of 1000 kept
      const key = uniqueKey("withdrawn-stale");
      const body = { charge, amount_cents: 200 };
      const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
      const answers: string[] = [];
      try {
        await outside.query("BEGIN");
        await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
        const first = postRefund({ apiKey, key, body });
        await sleep(LEASE_MS + 1_000);
        const takeOver = postRefund({ apiKey, key, body, baseUrl: `http://127.0.0.1:${OTHER_PORT}` });
        await sleep(2_000);
        const sweep = reapAbandoned({ olderThanMs: 0 }); // settles the lost refund: waits on the lock too
        await sleep(45_000); // the first attempt's hold times out (50 s) and goes again, behind them
        await outside.query("ROLLBACK");
        for (const a of [await first, await takeOver]) answers.push(`${a.status} ${a.text.slice(0, 100)}`);
        await sweep;
      } finally {
        await outside.query("ROLLBACK").catch(() => {});
        await outside.end();
      }
      await reapAbandoned({ olderThanMs: 0 });
      const t = await refundedOf(charge);
      const holds = await db.refundHold.findMany({ where: { chargeId: charge } });
      const records = await db.idempotentRequest.findMany({
        where: { id: { in: holds.map((h) => h.idempotentRequestId) } },
        select: { id: true, state: true, attempt: true },
      });
      assert.deepEqual(
        { held: t.held, holdRows: holds.length, gateway: t.gatewayCount },
        { held: 0, holdRows: 0, gateway: 0 },
        `answers:\n${answers.join("\n")}\nholds: ${JSON.stringify(holds, bigints)}\n` +
          `their records: ${JSON.stringify(records, bigints)}`,
      );
    } finally {
      await other.stop();
    }
  });
});
