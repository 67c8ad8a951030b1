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
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { env } from "~/env";
import { reapAbandoned } from "~/server/sweep/reapAbandoned";
import {
  chargeBody,
  closeConnections,
  db,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  recordOf,
  removeGatewayCharges,
  startAppInstance,
  uniqueKey,
  waitFor,
} from "../helpers";
import { delayingProxy } from "./delayingProxy";

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
after(closeConnections);

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
