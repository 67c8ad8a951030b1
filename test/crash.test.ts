import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { after, before, describe, test } from "node:test";
import { env } from "~/env";
import { runSweep } from "~/server/sweep/runSweep";
import {
  chargeBody, closeConnections, db, gatewayCharges, localCharges, newApiClient, postCharge, startAppInstance, tally,
  uniqueKey, untilGatewayShowsCharge, waitFor,
} from "./helpers";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 1;
const URL_B = `http://127.0.0.1:${PORT}`;

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("crash")));
after(closeConnections);

const record = (key: string) => db.idempotentRequest.findFirstOrThrow({ where: { idempotencyKey: key } });

describe("the app is killed mid-charge", () => {
  test("charge reached the gateway: after restart and sweep, one charge and the real 201", async () => {
    let app = await startAppInstance(PORT);
    const key = uniqueKey("crash");
    const body = chargeBody({ card_token: "tok_slow_3000" });
    const inFlight = postCharge({ apiKey, key, body, baseUrl: URL_B }).catch((e: Error) => e);

    // The gateway has taken the money and is still "processing" when we pull the plug.
    await waitFor("the gateway to charge", async () => (await gatewayCharges(body.customer_id)).length === 1);
    app.child.kill("SIGKILL");
    assert.ok((await inFlight) instanceof Error, "the client lost its connection");
    assert.equal((await record(key)).state, "in_progress");

    app = await startAppInstance(PORT);
    try {
      const early = await postCharge({ apiKey, key, body, baseUrl: URL_B });
      assert.equal(early.status, 409, "still owned by the dead process until the sweep");

      await untilGatewayShowsCharge(await record(key));
      const run = await runSweep({ reapAfterMs: 0 });
      assert.equal(run.reconciled, 1);
      const done = await record(key);
      assert.equal(done.state, "complete");
      assert.equal(done.reapedAs, "reconciled");

      const retry = await postCharge({ apiKey, key, body, baseUrl: URL_B });
      assert.equal(retry.status, 201, retry.text);
      assert.equal(retry.headers.get("idempotent-replay"), "true");
      const [gatewayCharge] = await gatewayCharges(body.customer_id);
      assert.equal(retry.json.gateway_charge_id, gatewayCharge!.id);
      assert.equal((await gatewayCharges(body.customer_id)).length, 1, "no duplicate at the gateway");
      assert.equal((await localCharges(body.customer_id)).length, 1, "no duplicate locally");
    } finally {
      await app.stop();
    }
  });

  test("charge never reached the gateway: after the sweep it is abandoned, and nothing was charged", async () => {
    // A gateway that accepts the connection and never answers: the app is
    // killed while it waits, before anything was charged.
    const sockets: import("node:net").Socket[] = [];
    const blackHole: Server = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => blackHole.listen(0, "127.0.0.1", r));
    const port = (blackHole.address() as { port: number }).port;
    const blackHoleUrl = `http://127.0.0.1:${port}`;
    const app = await startAppInstance(PORT, { GATEWAY_URL: blackHoleUrl, STRIPE_API_BASE: blackHoleUrl });
    const key = uniqueKey("crash-early");
    const body = chargeBody();
    const inFlight = postCharge({ apiKey, key, body, baseUrl: URL_B }).catch((e: Error) => e);
    await waitFor("the app to call the gateway", async () => sockets.length > 0);
    app.child.kill("SIGKILL");
    await inFlight;
    for (const s of sockets) s.destroy();
    blackHole.close();

    // A gateway whose lookup lags (Stripe's search) answers "unproven" until its
    // consistency window has passed since the last attempt; the simulator's own
    // protocol proves "never charged" at once. Either way the sweep never guesses.
    await new Promise((r) => setTimeout(r, env.STRIPE_SEARCH_CONSISTENCY_MS));
    const run = await runSweep({ reapAfterMs: 0 });
    assert.ok(run.reaped >= 1);
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 500);
    assert.equal(retry.json.error.code, "request_abandoned");
    assert.equal((await gatewayCharges(body.customer_id)).length, 0);
    assert.equal((await localCharges(body.customer_id)).length, 0);
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
        assert.ok(responses.every((r) => r.status === 201 || r.status === 409), JSON.stringify(tally(responses)));
        assert.equal((await localCharges(body.customer_id)).length, 1);
        assert.equal((await gatewayCharges(body.customer_id)).length, 1);
      }
    } finally {
      await app.stop();
    }
  });
});
