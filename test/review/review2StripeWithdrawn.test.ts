/**
 * Review of 9178858, GATEWAY=stripe: a record withdrawn by a take-over whose hold found nothing left, while its
 * first attempt still waited on the charge's lock (see review2StaleHold). That attempt holds afterwards and calls
 * Stripe, which has no deadline to refuse a late request by; the key, usable again, makes a second record, a new
 * gateway key and a second refund of the one operation. Fixed with review2StaleHold's fence: the stale attempt
 * holds nothing, so it never calls.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { env } from "~/env";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import {
  closeConnections,
  db,
  newApiClient,
  newCharge,
  postRefund,
  refundedOf,
  seedRecord,
  startAppInstance,
  uniqueKey,
} from "../helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("review2 stripe withdrawn")));
after(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE_MS = env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS;
const OTHER_PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 7;

describe("a withdrawn refund record whose first attempt still waited on the charge's lock", () => {
  const only = { skip: env.GATEWAY !== "stripe" && "GATEWAY=stripe only (the simulator refuses a late refund)" };
  test("one operation (one key, one body): at most one gateway refund", only, async () => {
    const { reapAbandoned } = await import("~/server/sweep/reapAbandoned");
    const other = await startAppInstance(OTHER_PORT);
    try {
      const charge = await newCharge(apiKey, { amount_cents: 1000 });
      // Another refund of it whose instance died after holding, before any gateway call: released, holding 1000.
      const dead = await seedRecord({
        apiClientId: clientId,
        phase: "released",
        route: REFUNDS_ROUTE,
        body: { charge, amount_cents: 1000 },
      });
      await db.refundHold.create({ data: { idempotentRequestId: dead.id, chargeId: charge, amountCents: 1000 } });
      await db.charge.update({ where: { id: charge }, data: { refundHeldCents: 1000 } });
      const key = uniqueKey("withdrawn-stripe");
      const body = { charge, amount_cents: 200 };
      const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
      const answers: string[] = [];
      try {
        await outside.query("BEGIN");
        await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
        const first = postRefund({ apiKey, key, body }); // claimed alone; its work's hold waits on the lock
        await sleep(LEASE_MS + 1_000);
        // A retry on another instance takes the record over; its hold waits behind the first's.
        const takeOver = postRefund({ apiKey, key, body, baseUrl: `http://127.0.0.1:${OTHER_PORT}` });
        await sleep(2_000);
        const sweep = reapAbandoned({ olderThanMs: 0 }); // writes the dead refund off: its give-back waits too
        await sleep(45_000); // the first attempt's hold times out (50 s) and goes again, behind both
        await outside.query("ROLLBACK"); // take-over: nothing left, withdrawn; give-back; first attempt: holds
        for (const a of [await first, await takeOver]) answers.push(`${a.status} ${a.text.slice(0, 90)}`);
        await sweep;
      } finally {
        await outside.query("ROLLBACK").catch(() => {});
        await outside.end();
      }
      // The client retries its operation under its key, as told (503, 409).
      const retry = await postRefund({ apiKey, key, body, headers: { Prefer: "wait=10" } });
      answers.push(`${retry.status} ${retry.text.slice(0, 90)}`);
      await sleep(2_000);
      await reapAbandoned({ olderThanMs: 0 });
      const t = await refundedOf(charge);
      assert.deepEqual(
        { gatewayRefunds: t.gatewayCount, gatewaySum: t.gatewaySum, appSum: t.appSum, held: t.held },
        { gatewayRefunds: 1, gatewaySum: 200, appSum: 200, held: 0 },
        answers.join("\n"),
      );
    } finally {
      await other.stop();
    }
  });
});
