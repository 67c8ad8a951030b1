/**
 * FINDING: the sweeper abandons an operation whose gateway request is still on
 * its way; the gateway then charges. The client is told 500 request_abandoned
 * ("no charge was made") while the money moved, and the app never records the
 * charge: the reconciliation can only report it, since the record is complete.
 *
 * The sweeper's "not charged" is a lookup at one moment ("the gateway has no
 * charge under this key now"); nothing stops a request sent earlier under the
 * same key from being processed afterwards. A request that reaches the gateway
 * late is modelled by a TCP hop that holds it and delivers it on command.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { env } from "~/env";
import { reconcileLedger } from "~/server/ledger/reconcile";
import { reapAbandoned } from "~/server/sweep/reapAbandoned";
import {
  chargeBody, closeConnections, db, gatewayCharges, localCharges, newApiClient, postCharge, recordOf, removeGatewayCharges,
  startAppInstance, uniqueKey, waitFor,
} from "../helpers";
import { delayingProxy } from "./delayingProxy";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 15;
const GATEWAY_PORT = Number(process.env.TEST_GATEWAY_PORT);

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("review late request")));
after(closeConnections);

describe("a gateway request that arrives after the app gave up", () => {
  test("is never answered request_abandoned once the money moved", { timeout: 180_000 }, async () => {
    const proxy = await delayingProxy(GATEWAY_PORT);
    const app = await startAppInstance(PORT, { GATEWAY_URL: proxy.url, STRIPE_API_BASE: proxy.url });
    const body = chargeBody();
    const key = uniqueKey("late");
    const started = new Date(Date.now() - 1_000);
    try {
      // 1. The app sends the charge; it does not get there in time (GATEWAY_TIMEOUT_MS): 503, claim released.
      const first = await postCharge({ apiKey, key, body, baseUrl: `http://127.0.0.1:${PORT}` });
      assert.equal(first.status, 503, first.text);
      assert.equal(proxy.heldRequests(), 1, "the charge request is on its way to the gateway");
      assert.equal((await recordOf(key))?.phase.name, "released");

      // 2. Nobody retries for REAP_AFTER_MS; the sweeper asks the gateway, which has no charge yet: abandoned.
      await new Promise((r) => setTimeout(r, env.REAP_AFTER_MS + 1_500));
      await waitFor("the sweeper to finish the record", async () => {
        await reapAbandoned();
        return (await recordOf(key))?.phase.name === "complete";
      }, 20_000);
      const record = (await recordOf(key))!;
      assert.equal(record.phase.name === "complete" && record.phase.finishedBy, "abandoned");
      const told = await postCharge({ apiKey, key, body });
      assert.equal(told.status, 500);
      assert.equal(told.json.error.code, "request_abandoned", "the client is told no charge was made");

      // 3. The request reaches the gateway now, and the gateway charges.
      assert.equal(await proxy.deliver(), 1);
      await waitFor("the late charge", async () => (await gatewayCharges(body.customer_id)).length > 0, 10_000);

      // The ledger: the gateway took money for an operation answered "request_abandoned", the app has no charge.
      const atGateway = await gatewayCharges(body.customer_id);
      const inApp = await localCharges(body.customer_id);
      await new Promise((r) => setTimeout(r, 1_500)); // Stripe lists whole seconds only (see stripeReconcileWindow)
      const reconciliation = await reconcileLedger({ since: started });
      const mine = reconciliation.findings.filter((f) => atGateway.some((c) => c.id === f.gatewayChargeId));
      console.log(`gateway charges ${atGateway.length}, app charges ${inApp.length}, reconciliation: ` +
        `repaired ${reconciliation.repaired}, findings ${JSON.stringify(mine.map((f) => [f.kind, f.evidence.why]))}`);
      try {
        assert.deepEqual(
          { gatewayCharges: atGateway.length, appCharges: inApp.length },
          { gatewayCharges: 0, appCharges: 0 },
          "a stored 500 request_abandoned must mean the gateway never charges for the operation",
        );
      } finally {
        // Undo the injected money so the run's closing reconciliation is not about this test.
        await removeGatewayCharges(atGateway.map((c) => c.id));
        await db.ledgerMismatch.updateMany({
          where: { gatewayChargeId: { in: atGateway.map((c) => c.id) } },
          data: { resolvedAt: new Date() },
        });
      }
    } finally {
      await app.stop();
      proxy.close();
    }
  });
});
