/**
 * The double-charge incident, reproduced: the gateway is slower than the
 * client's timeout, the client retries, many customers at once.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { ChargesClient } from "@charges/client";
import {
  APP_URL,
  closeConnections,
  db,
  gatewayCharges,
  localCharges,
  newApiClient,
  sweepUntil,
  waitFor,
} from "./helpers";

const CUSTOMERS = 20;
const SLOW_CARD = "tok_slow_1500"; // the gateway answers after 1.5 s ...
const CLIENT_TIMEOUT_MS = 500; // ... the client waits 0.5 s
/** The naive clients' card: it answers seconds after the client gave up, well within GATEWAY_TIMEOUT_MS (5 s). */
const NAIVE_CARD = "tok_slow_2500";
const NAIVE_ATTEMPTS = 4;

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("incident")));
after(closeConnections);

const customers = (tag: string) =>
  Array.from({ length: CUSTOMERS }, (_, i) => `cus_${tag}_${i}_${randomUUID().slice(0, 6)}`);
const body = (customer: string, card = SLOW_CARD) => ({
  amount_cents: 4200,
  currency: "usd",
  card_token: card,
  customer_id: customer,
});

/**
 * What the client did before the fix: retry on timeout, with a fresh key (or none) each time. Its timeout is the
 * incident's condition (the gateway slower than the client's patience), made independent of the machine's speed:
 * an attempt gives up once the gateway has taken its money, not after a fixed time, so that every attempt reaches
 * the gateway however loaded the machine is, and none sees its answer (NAIVE_CARD answers seconds later).
 */
async function naiveClient(customer: string, keyPerAttempt: "new key" | "no key") {
  for (let attempt = 1; attempt <= NAIVE_ATTEMPTS; attempt++) {
    const giveUp = new AbortController();
    const reached = waitFor(
      `attempt ${attempt} to reach the gateway`,
      async () => (await gatewayCharges(customer)).length >= attempt,
      60_000,
    );
    const sent = fetch(`${APP_URL}/api/charges`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${apiKey}`,
        "Content-Type": "application/json",
        ...(keyPerAttempt === "new key" ? { "Idempotency-Key": randomUUID() } : {}),
      },
      body: JSON.stringify(body(customer, NAIVE_CARD)),
      signal: giveUp.signal,
    }).then(
      (res) => res.status,
      () => 0, // gave up: "it must have failed", try again
    );
    await reached;
    giveUp.abort();
    if ((await sent) === 201) return;
  }
}
async function chargesPerCustomer(list: string[]) {
  return Promise.all(
    list.map(async (c) => ({ gateway: (await gatewayCharges(c)).length, local: (await localCharges(c)).length })),
  );
}

/** The slow charges started by the timed-out attempts finish after the client gave up. */
async function settle() {
  await new Promise((r) => setTimeout(r, 2_000));
}

describe("the incident: slow gateway, impatient client, many customers", () => {
  test("with the SDK (one key per operation): every operation 201, zero duplicate charges", async () => {
    const sdk = new ChargesClient({
      baseUrl: APP_URL,
      apiKey,
      attemptTimeoutMs: CLIENT_TIMEOUT_MS,
      deadlineMs: 30_000,
      baseDelayMs: 100,
    });
    const list = customers("sdk");
    const results = await Promise.all(list.map((c) => sdk.createCharge(body(c))));
    await settle();
    assert.ok(
      results.every((r) => r.ok && r.status === 201),
      JSON.stringify(results.filter((r) => !r.ok)),
    );
    assert.ok(
      results.every((r) => r.attempts > 1),
      "every operation needed a retry: the incident conditions held",
    );
    assert.ok(
      results.some((r) => r.replayed),
      "the retries were answered by replay",
    );
    for (const counts of await chargesPerCustomer(list)) assert.deepEqual(counts, { gateway: 1, local: 1 });
  });

  test("a naive client with a new key per attempt double-charges (why the key must be per operation)", async () => {
    const list = customers("naive");
    await Promise.all(list.map((c) => naiveClient(c, "new key")));
    const counts = await chargesPerCustomer(list);
    const duplicated = counts.filter((c) => c.gateway > 1);
    assert.equal(duplicated.length, CUSTOMERS, `every customer charged more than once: ${JSON.stringify(counts)}`);
  });

  test("without the header in optional mode: duplicates, and every attempt counted as keyless", async () => {
    const keylessCount = async () =>
      (await db.requestCountBucket.aggregate({ where: { apiClientId: clientId }, _sum: { keyless: true } }))._sum
        .keyless ?? 0;
    const before = await keylessCount();
    const list = customers("keyless");
    await Promise.all(list.map((c) => naiveClient(c, "no key")));
    const counts = await chargesPerCustomer(list);
    assert.ok(
      counts.every((c) => c.gateway > 1),
      JSON.stringify(counts),
    );
    // An attempt is counted by the transaction that completes its record: the ones the clients gave up on are still
    // at the gateway (NAIVE_CARD) when the clients return, and on a loaded machine some outlast the gateway timeout
    // (released, outcome unknown) and are finished by the sweeper, which the sweeps here stand for.
    const expected = CUSTOMERS * NAIVE_ATTEMPTS;
    await sweepUntil(
      "every keyless attempt's count",
      async () => (await keylessCount()) - before >= expected,
      60_000,
    ).catch(() => {});
    assert.equal((await keylessCount()) - before, expected, "each keyless attempt was counted, once");
  });
});
