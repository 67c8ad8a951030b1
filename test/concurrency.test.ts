import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { chargeOnGateway } from "~/server/charges/gatewayWork";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { env } from "~/env";
import { poolUsage } from "~/server/db";
import { slotsBetween } from "~/server/db/poolUsage";
import { runIdempotent, type WorkResult } from "~/server/idempotency";
import {
  chargeBody,
  closeConnections,
  gatewayCharges,
  localCharges,
  newApiClient,
  postCharge,
  tally,
  uniqueKey,
  onlyWork,
} from "./helpers";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("concurrency")));
after(closeConnections);

/**
 * N identical requests at once, same key: the unique index lets exactly one
 * through to the gateway; every other one waits its turn as a 409 or, if the
 * first finished already, gets the stored response replayed.
 */
async function burst(n: number, cardToken: string) {
  const key = uniqueKey(`burst-${n}`);
  const body = chargeBody({ card_token: cardToken });
  const responses = await Promise.all(Array.from({ length: n }, () => postCharge({ apiKey, key, body })));

  const counts = tally(responses);
  const originals = responses.filter((r) => r.status === 201 && r.headers.get("idempotent-replay") !== "true");
  assert.equal(originals.length, 1, `exactly one original 201, got ${JSON.stringify(counts)}`);
  for (const r of responses) {
    if (r.status === 409) {
      assert.equal(r.json.error.code, "request_in_progress");
      assert.equal(r.headers.get("retry-after"), "2");
    } else {
      assert.equal(r.status, 201, `unexpected answer ${r.status}: ${r.text}`);
      assert.equal(r.text, originals[0]!.text, "a replay is byte-for-byte the original response");
    }
  }
  assert.equal((await localCharges(body.customer_id)).length, 1, "one local charge");
  assert.equal((await gatewayCharges(body.customer_id)).length, 1, "one charge at the gateway");
  return { counts, key, body, original: originals[0]! };
}

describe("identical concurrent requests make exactly one charge", () => {
  for (const n of [2, 10, 50]) {
    test(`${n} at once, fast gateway`, async () => {
      await burst(n, "tok_visa");
    });
    test(`${n} at once, slow gateway (all overlap the first)`, async () => {
      const { counts } = await burst(n, "tok_slow_1500");
      assert.equal(counts["409"], n - 1, `every other request saw the first in flight: ${JSON.stringify(counts)}`);
    });
  }

  test("after the burst, a retry replays the stored response", async () => {
    const { key, body, original } = await burst(10, "tok_slow_200");
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get("idempotent-replay"), "true");
    assert.equal(retry.text, original.text);
  });

  test("different keys in parallel are independent charges", async () => {
    const customer = `cus_parallel_${Date.now()}`;
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ customer_id: customer }) }),
      ),
    );
    assert.deepEqual(tally(responses), { "201": 20 });
    assert.equal((await localCharges(customer)).length, 20);
    assert.equal((await gatewayCharges(customer)).length, 20);
  });
});

describe("a burst of completions", () => {
  test("takes at most half the pool, so claims and replays find a connection; each is recorded once", async () => {
    // 20 operations charge at the gateway, then all complete in the same instant.
    const n = 20;
    let arrived = 0;
    let release!: () => void;
    const allCharged = new Promise<void>((r) => (release = r));
    let since = 0;
    const bodies = Array.from({ length: n }, () => chargeBody());
    const answers = Promise.all(
      bodies.map((body, i) =>
        runIdempotent(
          {
            idempotencyKey: uniqueKey("completion"),
            route: CHARGES_ROUTE,
            apiClientId: clientId,
            requestHash: `${i}`.padStart(64, "0"),
          },
          onlyWork(async (held): Promise<WorkResult> => {
            const result = await chargeOnGateway(held, { ...body, customer_id: body.customer_id });
            // the claims' slots are behind us
            if (++arrived === n) {
              setTimeout(() => {
                since = Date.now();
                release();
              }, 200);
            }
            await allCharged;
            return result;
          }),
        ),
      ),
    );
    const outcomes = await answers;
    assert.ok(outcomes.every((o) => o.kind === "fresh" && o.response.status === 201));
    const busiest = Math.max(...slotsBetween(poolUsage.recent, since).map((s) => s.maxActive));
    // The key events' flush (events.ts, once a second) may hold one connection beside them.
    assert.ok(
      busiest <= env.DATABASE_POOL_SIZE / 2 + 1,
      `${busiest} of ${env.DATABASE_POOL_SIZE} connections for ${n} completions at once`,
    );
    for (const body of bodies) assert.equal((await localCharges(body.customer_id)).length, 1);
  });
});
