/**
 * FINDING: the reconciliation reports a false "gateway charge without app
 * charge" when a charge completes while a run is going through its page.
 *
 * reconcileLedger reads the app charges of a whole page of gateway charges in
 * one query, then settles the page's orphans one by one, reading each orphan's
 * record afresh. A request that completes between the two reads (its charge row
 * and its completed record commit together) is seen without a charge (old read)
 * and with a complete record (new read): "the record completed without this
 * charge", a mismatch stored for people to investigate (and refund?), on a
 * ledger that is in order. The same happens with two sweepers reconciling at
 * once (one repairs a record while the other is between its two reads).
 *
 * Here the gap between the two reads is widened deterministically: the page's
 * first orphan is a repairable record whose row an outside transaction holds,
 * so the run waits on it while the second charge completes.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { reconcileLedger } from "~/server/ledger/reconcile";
import {
  chargeAtGateway,
  chargeBody,
  closeConnections,
  db,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  seedRecord,
  uniqueKey,
  waitFor,
} from "../helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("review reconcile race")));
after(closeConnections);

describe("a charge that completes while the reconciliation runs", () => {
  test("is not reported as a gateway charge without an app charge", { timeout: 60_000 }, async () => {
    const since = new Date(Date.now() - 1_000);
    // An orphan the run will repair: its holder died after the gateway charged.
    const orphanBody = chargeBody();
    const orphan = await seedRecord({ apiClientId: clientId, phase: "lease_expired", body: orphanBody, ageMs: 5_000 });
    await chargeAtGateway(orphan, orphanBody);

    // A live request, charged at the gateway at once and answered 4 s later.
    const body = chargeBody({ card_token: "tok_slow_4000" });
    const key = uniqueKey("race");
    const live = postCharge({ apiKey, key, body });
    await waitFor("the live charge at the gateway", async () => (await gatewayCharges(body.customer_id)).length === 1);

    const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
    let released = false;
    try {
      await outside.query("BEGIN");
      await outside.query("SELECT id FROM idempotent_requests WHERE id = ? FOR UPDATE", [orphan.id]);
      const run = reconcileLedger({ since, until: new Date(Date.now() + 5_000) });
      await waitFor("the run to wait on the orphan's row", async () => {
        await new Promise((r) => setTimeout(r, 150)); // innodb_trx is refreshed at most every 100 ms
        const rows: unknown[] = await outside.query(
          "SELECT trx_id FROM information_schema.innodb_trx " +
            "WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE 'UPDATE idempotent_requests%'",
        );
        return rows.length > 0;
      });
      const answer = await live; // the live charge completes meanwhile
      assert.equal(answer.status, 201, answer.text);
      await outside.query("ROLLBACK");
      released = true;
      const result = await run;

      const [gatewayCharge] = await gatewayCharges(body.customer_id);
      assert.equal((await localCharges(body.customer_id)).length, 1, "the app has the live charge");
      const about = result.findings.filter((f) => f.gatewayChargeId === gatewayCharge!.id);
      try {
        assert.deepEqual(
          about.map((f) => [f.kind, f.evidence.why]),
          [],
          "no mismatch about a charge the app has",
        );
      } finally {
        await db.ledgerMismatch.updateMany({
          where: { gatewayChargeId: gatewayCharge!.id },
          data: { resolvedAt: new Date() },
        });
      }
    } finally {
      if (!released) await outside.query("ROLLBACK").catch(() => {});
      await outside.end();
    }
  });
});
