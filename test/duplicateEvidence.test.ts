/**
 * Duplicates by evidence against the real app and database: a customer charged
 * twice by a keyless retry and twice under a new key per attempt (each client
 * timed out before the slow gateway answered), and legitimately for two
 * same-amount purchases (another card token) and a repeat purchase (the same
 * request again after the first was answered). The sweeper's scan keeps each
 * pair's evidence, paired by arrival; the incident view lists the two likely
 * double charges only; the customer page highlights only those; a pasted id
 * lands on its page.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";
import type { SessionUser } from "~/server/auth/session";
import { scanForDuplicates } from "~/server/customers/duplicates";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { chargeBody, closeConnections, db, newApiClient, postCharge, waitFor } from "./helpers";

after(closeConnections);

async function support(): Promise<SessionUser> {
  const u = await db.staffUser.create({
    data: { email: `evidence-${randomUUID()}@example.com`, name: "Support", role: "support", passwordHash: "x" },
  });
  return { id: u.id, email: u.email, name: u.name, role: u.role };
}

/** The slow gateway answers after 3 s; the impatient client gives up after 0.5 s. */
const SLOW_CARD = "tok_slow_3000";
const CLIENT_TIMEOUT_MS = 500;

describe("duplicates by evidence", () => {
  test("a keyless retry and a new key per attempt are double charges; purchases and repeats are not", async () => {
    const started = new Date(Date.now() - 1_000);
    const { apiKey } = await newApiClient("evidence");
    const customer = `cus_ev_${randomUUID().slice(0, 8)}`;
    const send = (opts: { key?: string; card: string; amount: number; signal?: AbortSignal }) =>
      postCharge({
        apiKey,
        key: opts.key,
        body: chargeBody({ customer_id: customer, card_token: opts.card, amount_cents: opts.amount }),
        signal: opts.signal,
      });
    const charge = async (opts: { key?: string; card: string; amount: number }): Promise<string> => {
      const res = await send(opts);
      assert.equal(res.status, 201, res.text);
      return res.json.id as string;
    };
    /**
     * A client that gives up before the gateway answers, once its request holds a record (on a loaded machine the
     * claim can take longer than the client's patience, and a request gone before its claim is not worked on).
     */
    const gaveUp = async (opts: { key?: string; card: string; amount: number }) => {
      const records = () => db.idempotentRequest.count({ where: { customerId: customer } });
      const before = await records();
      const client = new AbortController();
      const sent = send({ ...opts, signal: client.signal }).catch(() => null);
      await new Promise((r) => setTimeout(r, CLIENT_TIMEOUT_MS));
      await waitFor("the request's record", async () => (await records()) > before);
      client.abort();
      assert.equal(await sent, null, "the client gave up before the gateway answered");
    };
    const untilCharged = async (n: number) => {
      for (let i = 0; i < 100 && (await db.charge.count({ where: { customerId: customer } })) < n; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    // The keyless retry: the first attempt's client went away, its charge was made all the same.
    await gaveUp({ card: SLOW_CARD, amount: 2500 });
    const keyless2 = await charge({ card: SLOW_CARD, amount: 2500 });
    await untilCharged(2);
    const purchase = await charge({ card: "tok_mastercard", amount: 2500 }); // a second purchase, same amount
    const repeat = await charge({ card: "tok_mastercard", amount: 2500 }); // the same again, knowingly
    await gaveUp({ key: randomUUID(), card: SLOW_CARD, amount: 4000 });
    const keyed2 = await charge({ key: randomUUID(), card: SLOW_CARD, amount: 4000 }); // its retry, new key
    await untilCharged(6);
    const charges = await db.charge.findMany({ where: { customerId: customer }, orderBy: { requestedAt: "asc" } });
    const [keyless1, keyed1] = [charges[0]!.id, charges[4]!.id];
    assert.deepEqual(
      charges.map((c) => c.id),
      [keyless1, keyless2, purchase, repeat, keyed1, keyed2],
      "ordered by arrival",
    );
    // The first attempts were settled after their retries arrived: arrival is not settlement.
    for (const i of [0, 4]) assert.ok(charges[i]!.createdAt > charges[i + 1]!.requestedAt);

    // The scan skips charges younger than its settle time (5 s); the events are written within a second.
    await new Promise((r) => setTimeout(r, 1_500));
    await scanForDuplicates({ now: new Date(Date.now() + 10_000) });
    const pairs = await db.possibleDuplicateCharge.findMany({ where: { customerId: customer } });
    const evidenceOf = Object.fromEntries(pairs.map((p) => [p.chargeId, [p.earlierChargeId, p.evidence]]));
    assert.deepEqual(evidenceOf, {
      [keyless2]: [keyless1, "keyless_retry"],
      [purchase]: [keyless2, "two_purchases"],
      [repeat]: [purchase, "repeat_purchase"],
      [keyed2]: [keyed1, "new_key_retry"],
    });
    // Gaps are between the arrivals: the retry came when the client gave up (0.5 s), not when the first settled.
    const retryPair = pairs.find((p) => p.chargeId === keyless2)!;
    // (Less the first claim's own time: the client's clock started before the record's.)
    const settledAfter = charges[0]!.createdAt.getTime() - charges[0]!.requestedAt.getTime();
    assert.ok(retryPair.gapMs > CLIENT_TIMEOUT_MS / 2 && retryPair.gapMs < settledAfter, `gap ${retryPair.gapMs} ms`);
    // The requests are kept with the pair (they outlive the records), side by side, with the first's answers.
    const kept = JSON.parse(pairs.find((p) => p.chargeId === keyed2)!.requests!);
    assert.notEqual(kept.later.idempotencyKey, kept.earlier.idempotencyKey);
    assert.equal(kept.later.requestHash, kept.earlier.requestHash);
    assert.equal(kept.later.fields.customer_id, customer);
    assert.equal(kept.later.fields.card_token, undefined, "never the card token");
    assert.ok(
      kept.earlier.answers.some((a: { clientGone: boolean }) => a.clientGone),
      "its client had gone",
    );

    const s = createCaller(createInnerTRPCContext({ user: await support() }));
    const incident = await s.customers.incident({ since: started, until: new Date(Date.now() + 60_000) });
    const ours = incident.cases.filter((c) => c.customerId === customer);
    assert.deepEqual(Object.fromEntries(ours.map((p) => [p.id, p.evidence.key])), {
      [keyed2]: "new_key_retry",
      [keyless2]: "keyless_retry",
    });
    assert.ok(ours.every((p) => p.gapMs >= 0 && p.gapMs < 60_000 && p.status.state === "to_refund"));
    assert.ok(incident.histogram.reduce((n, b) => n + b.pairs, 0) >= 2);
    const { csv } = await s.customers.incidentCsv({ since: started, until: new Date(Date.now() + 60_000) });
    assert.equal(csv.split("\r\n").filter((l) => l.startsWith(`${customer},`)).length, 2);
    // The preset: the last hour has them.
    const lastHour = await s.customers.incident({ hours: 1 });
    assert.equal(lastHour.cases.filter((c) => c.customerId === customer).length, 2);
    // A range before the charges has none of them; an impossible range is refused.
    const before = await s.customers.incident({ since: new Date(started.getTime() - 3_600_000), until: started });
    assert.equal(before.cases.filter((c) => c.customerId === customer).length, 0);
    await assert.rejects(s.customers.incident({ since: new Date(), until: started }), /start before it ends/);

    const likely = await s.customers.duplicates({ evidence: "likely", since: started });
    assert.deepEqual(
      likely.items
        .filter((i) => i.customerId === customer)
        .map((i) => i.id)
        .sort(),
      [keyed2, keyless2].sort(),
    );

    // The customer page highlights the two retries and their originals, not the purchases.
    const page = await s.customers.charges({ customerId: customer });
    const flagged = page.charges.filter((c) => c.possibleDuplicateOf?.evidence.likely).map((c) => c.id);
    assert.deepEqual(flagged.sort(), [keyed1, keyed2, keyless1, keyless2].sort());
    assert.equal(page.charges.find((c) => c.id === purchase)!.possibleDuplicateOf?.evidence.key, "two_purchases");
    assert.equal(page.charges.find((c) => c.id === repeat)!.possibleDuplicateOf?.evidence.key, "repeat_purchase");
    // Between two times of arrival: only the charges paid in it.
    const firstTwo = page.charges.filter((c) => c.id === keyless1 || c.id === keyless2);
    const narrowed = await s.customers.charges({
      customerId: customer,
      since: new Date(Math.min(...firstTwo.map((c) => c.requestedAt.getTime()))),
      until: new Date(Math.max(...firstTwo.map((c) => c.requestedAt.getTime()))),
    });
    assert.deepEqual(narrowed.charges.map((c) => c.id).sort(), [keyless1, keyless2].sort());
    assert.equal(narrowed.total.count, 2);
  });

  test("search that lands: a whole charge id, key or customer id names its page; a part names none", async () => {
    const { apiKey } = await newApiClient("resolve");
    const customer = `cus_rs_${randomUUID().slice(0, 8)}`;
    const key = `resolve-${randomUUID()}`;
    const res = await postCharge({ apiKey, key, body: chargeBody({ customer_id: customer }) });
    assert.equal(res.status, 201, res.text);
    const record = await db.idempotentRequest.findFirstOrThrow({ where: { customerId: customer } });
    const s = createCaller(createInnerTRPCContext({ user: await support() }));
    assert.deepEqual(await s.requests.resolve({ q: res.json.id }), [
      { kind: "charge", id: res.json.id, path: `/admin/charges/${res.json.id}` },
    ]);
    assert.deepEqual(await s.requests.resolve({ q: key }), [
      { kind: "idempotency key", id: String(record.id), path: `/admin/requests/${record.id}` },
    ]);
    assert.deepEqual(await s.requests.resolve({ q: customer }), [
      { kind: "customer", id: customer, path: `/admin/customers/${customer}` },
    ]);
    assert.deepEqual(await s.requests.resolve({ q: key.slice(0, 20) }), []);
  });
});
