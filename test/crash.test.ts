import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { env } from "~/env";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import {
  chargeBody,
  closeConnections,
  db,
  gatewayCharges,
  gatewayRefunds,
  localCharges,
  newApiClient,
  newCharge,
  postCharge,
  postRefund,
  recordOf,
  startAppInstance,
  sweepUntil,
  tally,
  uniqueKey,
  waitFor,
  type ApiResponse,
} from "./helpers";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 1;
const URL_B = `http://127.0.0.1:${PORT}`;
const LEASE_MS = env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS;

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("crash")));
after(closeConnections);

/** Retries every 250 ms, as an impatient client would, until the answer is final. */
async function retryUntilFinal(send: () => Promise<ApiResponse>, timeoutMs: number): Promise<ApiResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await send();
    if (res.status !== 409 && res.status !== 503) return res;
    if (Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A gateway that accepts connections and never answers: the app is killed while it waits. */
async function blackHoleGateway() {
  const sockets: Socket[] = [];
  const server: Server = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    sockets,
    close: () => {
      for (const s of sockets) s.destroy();
      return server.close();
    },
  };
}

describe("the app is killed mid-charge", () => {
  test("charge reached the gateway: a retry after the restart takes over at the lease's end, one charge", async () => {
    let app = await startAppInstance(PORT);
    const key = uniqueKey("crash");
    const body = chargeBody({ card_token: "tok_slow_3000" });
    const inFlight = postCharge({ apiKey, key, body, baseUrl: URL_B }).catch((e: Error) => e);

    // The gateway has taken the money and is still "processing" when we pull the plug.
    await waitFor("the gateway to charge", async () => (await gatewayCharges(body.customer_id)).length === 1);
    app.child.kill("SIGKILL");
    assert.ok((await inFlight) instanceof Error, "the client lost its connection");
    const claimed = (await recordOf(key))!;
    assert.equal(claimed.phase.name, "held");

    app = await startAppInstance(PORT);
    try {
      // While the dead process's lease runs (the database's clock judges it), a retry is told to come back.
      const early = await postCharge({ apiKey, key, body, baseUrl: URL_B });
      assert.ok(early.status === 409 || early.status === 201, early.text);
      // Retried until final, with room for a loaded machine: what matters is who finished it, not how fast.
      const retry = await retryUntilFinal(() => postCharge({ apiKey, key, body, baseUrl: URL_B }), LEASE_MS + 60_000);
      assert.equal(retry.status, 201, retry.text);
      // Soon after the lease, not at the sweeper's REAP_AFTER_MS: no sweep runs in this stack, and the retry took
      // the claim over (attempt 2) as a retry, within the attempt window (REAP_AFTER_MS), so it stored the answer
      // as the request that held the claim ("reconciled" would be a recovery's, after the window).
      const done = (await recordOf(key))!;
      assert.equal(done.attempt, 2, "taken over under the next fencing token");
      assert.equal(done.phase.name === "complete" && done.phase.finishedBy, "request", "finished by the retry");
      const [gatewayCharge] = await gatewayCharges(body.customer_id);
      assert.equal(retry.json.gateway_charge_id, gatewayCharge!.id);
      assert.equal((await gatewayCharges(body.customer_id)).length, 1, "no duplicate at the gateway");
      assert.equal((await localCharges(body.customer_id)).length, 1, "no duplicate locally");
    } finally {
      await app.stop();
    }
  });

  test("charge never reached the gateway: after the lease the sweep abandons it, and nothing was charged", async () => {
    const gatewayHole = await blackHoleGateway();
    // A short gateway timeout, so the lease (timeout + margin) is over soon.
    const app = await startAppInstance(PORT, {
      GATEWAY_URL: gatewayHole.url,
      STRIPE_API_BASE: gatewayHole.url,
      GATEWAY_TIMEOUT_MS: "1000",
      LEASE_MARGIN_MS: "500",
    });
    const key = uniqueKey("crash-early");
    const body = chargeBody();
    const inFlight = postCharge({ apiKey, key, body, baseUrl: URL_B }).catch((e: Error) => e);
    await waitFor("the app to call the gateway", async () => gatewayHole.sockets.length > 0);
    app.child.kill("SIGKILL");
    await inFlight;
    gatewayHole.close();

    await waitFor("the lease to end", async () => (await recordOf(key))?.phase.name === "lease_expired", 5_000);
    // A gateway whose lookup lags (Stripe's search) cannot prove "never charged" until its consistency
    // window has passed since the last attempt; the simulator's own protocol proves it at once.
    await sweepUntil("the sweep to abandon it", async () => (await recordOf(key))?.phase.name === "complete");
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 500);
    assert.equal(retry.json.error.code, "request_abandoned");
    assert.equal((await gatewayCharges(body.customer_id)).length, 0);
    assert.equal((await localCharges(body.customer_id)).length, 0);
  });

  test("a keyless charge in flight when the app dies is recorded by the sweep", async () => {
    const app = await startAppInstance(PORT, { GATEWAY_TIMEOUT_MS: "4000", LEASE_MARGIN_MS: "500" });
    const body = chargeBody({ card_token: "tok_slow_3000" });
    const inFlight = postCharge({ apiKey, body, baseUrl: URL_B }).catch((e: Error) => e);
    await waitFor("the gateway to charge", async () => (await gatewayCharges(body.customer_id)).length === 1);
    app.child.kill("SIGKILL");
    await inFlight;
    await new Promise((r) => setTimeout(r, 4_600)); // the dead holder's lease
    await sweepUntil("the sweep to record the charge", async () => (await localCharges(body.customer_id)).length === 1);
  });
});

/** A charge's refunds on both sides, and what it still holds. */
async function refundsOf(chargeId: string) {
  const charge = await db.charge.findUniqueOrThrow({ where: { id: chargeId } });
  const app = await db.refund.findMany({ where: { chargeId } });
  const gateway = await gatewayRefunds(chargeId);
  return {
    refunded: charge.amountRefundedCents,
    held: charge.refundHeldCents,
    app: app.map((r) => [r.gatewayRefundId, r.amountCents]).sort(),
    gateway: gateway.map((r) => [r.id, r.amount]).sort(),
    holds: await db.refundHold.count({ where: { chargeId } }),
  };
}

describe("the app is killed mid-refund", () => {
  test("several refunds reached the gateway: retries after the restart take over, one refund each", async () => {
    let app = await startAppInstance(PORT);
    // Two charges, three refunds (two partial ones of one charge, racing), all slow at the gateway.
    const [a, b] = [
      await newCharge(apiKey, { amount_cents: 1000, card_token: "tok_refund_slow_3000" }),
      await newCharge(apiKey, { amount_cents: 700, card_token: "tok_refund_slow_3000" }),
    ];
    const ops = [
      { key: uniqueKey("crash-refund"), body: { charge: a, amount_cents: 400 } },
      { key: uniqueKey("crash-refund"), body: { charge: a, amount_cents: 600 } },
      { key: uniqueKey("crash-refund"), body: { charge: b } },
    ];
    const inFlight = ops.map((op) => postRefund({ apiKey, ...op, baseUrl: URL_B }).catch((e: Error) => e));
    await waitFor("the gateway to refund", async () => {
      const [ra, rb] = [await gatewayRefunds(a), await gatewayRefunds(b)];
      return ra.length === 2 && rb.length === 1;
    });
    app.child.kill("SIGKILL");
    for (const r of await Promise.all(inFlight)) assert.ok(r instanceof Error, "the client lost its connection");
    assert.deepEqual(
      [(await refundsOf(a)).held, (await refundsOf(b)).held],
      [1000, 700],
      "the dead process's holds stay while the outcome is unknown",
    );

    app = await startAppInstance(PORT);
    try {
      const retries = await Promise.all(
        ops.map((op) => retryUntilFinal(() => postRefund({ apiKey, ...op, baseUrl: URL_B }), LEASE_MS + 60_000)),
      );
      for (const r of retries) assert.equal(r.status, 201, r.text);
      for (const op of ops) assert.equal((await recordOf(op.key, REFUNDS_ROUTE))!.attempt, 2, "taken over");
      for (const [charge, amount] of [
        [a, 1000],
        [b, 700],
      ] as const) {
        const totals = await refundsOf(charge);
        assert.deepEqual([totals.refunded, totals.held, totals.holds], [amount, 0, 0], "the holds became refunds");
        assert.deepEqual(totals.app, totals.gateway, "one app refund per gateway refund, same ids and amounts");
      }
      assert.deepEqual(retries.map((r) => r.json.amount_cents).sort(), [400, 600, 700]);
    } finally {
      await app.stop();
    }
  });

  test("a refund that never reached the gateway: the sweep gives its hold back, and nothing was refunded", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 900 });
    const gatewayHole = await blackHoleGateway();
    const app = await startAppInstance(PORT, {
      GATEWAY_URL: gatewayHole.url,
      STRIPE_API_BASE: gatewayHole.url,
      GATEWAY_TIMEOUT_MS: "1000",
      LEASE_MARGIN_MS: "500",
    });
    const key = uniqueKey("crash-refund-early");
    const body = { charge, amount_cents: 900 };
    const inFlight = postRefund({ apiKey, key, body, baseUrl: URL_B }).catch((e: Error) => e);
    await waitFor("the app to call the gateway", async () => gatewayHole.sockets.length > 0);
    app.child.kill("SIGKILL");
    await inFlight;
    gatewayHole.close();
    assert.equal((await refundsOf(charge)).held, 900, "held before the gateway call");

    await waitFor("the lease to end", async () => (await recordOf(key, REFUNDS_ROUTE))?.phase.name === "lease_expired");
    await sweepUntil("the sweep to write it off", async () => {
      return (await recordOf(key, REFUNDS_ROUTE))?.phase.name === "complete";
    });
    const retry = await postRefund({ apiKey, key, body });
    assert.equal(retry.status, 500, retry.text);
    assert.equal(retry.json.error.code, "request_abandoned");
    assert.deepEqual(await refundsOf(charge), { refunded: 0, held: 0, app: [], gateway: [], holds: 0 });
    // The amount is free again: a new operation refunds all of it.
    const again = await postRefund({ apiKey, key: uniqueKey(), body });
    assert.equal(again.status, 201, again.text);
    assert.equal((await refundsOf(charge)).refunded, 900);
  });

  test("a keyless refund in flight when the app dies is recorded by the sweep", async () => {
    const charge = await newCharge(apiKey, { amount_cents: 500, card_token: "tok_refund_slow_3000" });
    const app = await startAppInstance(PORT, { GATEWAY_TIMEOUT_MS: "4000", LEASE_MARGIN_MS: "500" });
    const inFlight = postRefund({ apiKey, body: { charge }, baseUrl: URL_B }).catch((e: Error) => e);
    await waitFor("the gateway to refund", async () => (await gatewayRefunds(charge)).length === 1);
    app.child.kill("SIGKILL");
    await inFlight;
    await new Promise((r) => setTimeout(r, 4_600)); // the dead holder's lease
    await sweepUntil("the sweep to record the refund", async () => (await refundsOf(charge)).refunded === 500);
    const totals = await refundsOf(charge);
    assert.deepEqual([totals.held, totals.holds, totals.app.length], [0, 0, 1]);
    assert.deepEqual(totals.app, totals.gateway);
  });
});

describe("two app instances", () => {
  test("the same key sent to both in parallel makes one charge", async () => {
    const app = await startAppInstance(PORT);
    try {
      for (const token of ["tok_visa", "tok_slow_1000"]) {
        const key = uniqueKey("two-instances");
        const body = chargeBody({ card_token: token });
        const responses = await Promise.all(
          Array.from({ length: 20 }, (_, i) => postCharge({ apiKey, key, body, baseUrl: i % 2 ? URL_B : undefined })),
        );
        const originals = responses.filter((r) => r.status === 201 && r.headers.get("idempotent-replay") !== "true");
        assert.equal(originals.length, 1, JSON.stringify(tally(responses)));
        assert.ok(
          responses.every((r) => r.status === 201 || r.status === 409),
          JSON.stringify(tally(responses)),
        );
        assert.equal((await localCharges(body.customer_id)).length, 1);
        assert.equal((await gatewayCharges(body.customer_id)).length, 1);
      }
    } finally {
      await app.stop();
    }
  });
});
