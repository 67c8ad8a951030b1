/**
 * A refund request held up on its way to the gateway past its operation's write-off, end to end (review of
 * e8399d5, 2026-12-05): the app gives up (unknown outcome), the sweeper proves no refund and gives the hold
 * back, then the request lands. Through the simulator's protocol its deadline refuses it (nothing refunded);
 * through Stripe's it refunds, and the reconciliation records it as the operation's refund. Either way the
 * invariants hold: 1:1, refunded <= charged, nothing held.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { env } from "~/env";
import { reconcileLedger } from "~/server/ledger/reconcile";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import {
  closeConnections,
  db,
  newApiClient,
  newCharge,
  postRefund,
  recordOf,
  refundedOf,
  startAppInstance,
  sweepUntil,
  uniqueKey,
  waitFor,
} from "../helpers";
import { delayingProxy } from "./delayingProxy";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 17;
const GATEWAY_PORT = Number(process.env.TEST_GATEWAY_PORT);
const show = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? String(x) : x));

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("review late refund e2e")));
after(closeConnections);

describe("a refund request that reaches the gateway after its write-off", () => {
  test("sim: refused by its deadline; stripe: recorded by the reconciliation", { timeout: 90_000 }, async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1_000 });
    const proxy = await delayingProxy(GATEWAY_PORT);
    const app = await startAppInstance(PORT, { GATEWAY_URL: proxy.url, STRIPE_API_BASE: proxy.url });
    const key = uniqueKey("late-e2e");
    try {
      const first = await postRefund({
        apiKey,
        key,
        body: { charge, amount_cents: 400 },
        baseUrl: `http://127.0.0.1:${PORT}`,
      });
      assert.ok(proxy.heldRequests() >= 1, "the refund request is held on its way");
      console.log(`the client was told ${first.status} ${first.json?.error?.code ?? ""}`);
      await sweepUntil("the sweeper writes the operation off", async () => {
        const r = await recordOf(key, REFUNDS_ROUTE);
        return r?.phase.name === "complete";
      });
      const written = (await recordOf(key, REFUNDS_ROUTE))!;
      assert.equal(written.phase.name === "complete" && written.phase.finishedBy, "abandoned", show(written.phase));
      assert.deepEqual([(await refundedOf(charge)).refunded, (await refundedOf(charge)).held], [0, 0]);

      await proxy.deliver();
      await sleep(env.GATEWAY === "stripe" ? 1_500 : 0);
      const window = { since: new Date(Date.now() - 120_000), until: new Date(Date.now() + 2_000) };
      const result = await reconcileLedger(window);
      const money = await refundedOf(charge);
      console.log(`after delivery and reconciliation: ${show(money)}; findings ${show(result.findings)}`);
      if (env.GATEWAY === "stripe") {
        assert.deepEqual(
          [money.gatewayCount, money.appCount, money.refunded, money.appSum, money.gatewaySum, money.held],
          [1, 1, 400, 400, 400, 0],
          "Stripe has no deadline: the late refund is recorded",
        );
        assert.equal(
          await db.auditEvent.count({ where: { action: "ledger.late_refund_recorded", targetId: charge } }),
          1,
        );
        // Held up longer than STRIPE_SEARCH_CONSISTENCY_MS allows for: the answer is corrected to the refund, and
        // the broken one reported for a person (the client was told no refund was made).
        assert.deepEqual(
          result.findings.map((f) => f.kind),
          ["refund_after_write_off"],
          show(result.findings),
        );
        const replay = await postRefund({ apiKey, key, body: { charge, amount_cents: 400 } });
        assert.equal(replay.status, 201, replay.text);
      } else {
        assert.deepEqual(
          [money.gatewayCount, money.appCount, money.refunded, money.held],
          [0, 0, 0, 0],
          "the simulator's deadline refused it",
        );
      }
      if (env.GATEWAY !== "stripe") assert.deepEqual(result.findings, [], "the ledger is in order");
      // The rest of the charge is still refundable, once, to the cent.
      const rest = await postRefund({ apiKey, key: uniqueKey(), body: { charge } });
      assert.equal(rest.status, 201, rest.text);
      const end = await refundedOf(charge);
      assert.deepEqual(
        [end.refunded, end.appSum, end.gatewaySum, end.held, end.appCount === end.gatewayCount],
        [1_000, 1_000, 1_000, 0, true],
        show(end),
      );
      await waitFor("nothing held", async () => (await db.refundHold.count({ where: { chargeId: charge } })) === 0);
    } finally {
      await app.stop();
      proxy.close();
    }
  });
});
