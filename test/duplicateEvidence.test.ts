/**
 * Duplicates by evidence against the real app and database: a customer charged
 * twice by a keyless retry, twice under a new key per attempt, and legitimately
 * for two same-amount purchases (another card token). The sweeper's scan keeps
 * each pair's evidence; the incident view lists the two likely double charges
 * only; the customer page highlights only those; a pasted id lands on its page.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";
import type { SessionUser } from "~/server/auth/session";
import { scanForDuplicates } from "~/server/customers/duplicates";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { chargeBody, closeConnections, db, newApiClient, postCharge } from "./helpers";

after(closeConnections);

async function support(): Promise<SessionUser> {
  const u = await db.staffUser.create({
    data: { email: `evidence-${randomUUID()}@example.com`, name: "Support", role: "support", passwordHash: "x" },
  });
  return { id: u.id, email: u.email, name: u.name, role: u.role };
}

describe("duplicates by evidence", () => {
  test("a keyless retry and a new key per attempt are double charges; another card is two purchases", async () => {
    const started = new Date(Date.now() - 1_000);
    const { apiKey } = await newApiClient("evidence");
    const customer = `cus_ev_${randomUUID().slice(0, 8)}`;
    const charge = async (opts: { key?: string; card: string; amount: number }) => {
      const res = await postCharge({
        apiKey,
        key: opts.key,
        body: chargeBody({ customer_id: customer, card_token: opts.card, amount_cents: opts.amount }),
      });
      assert.equal(res.status, 201, res.text);
      return res.json.id as string;
    };
    const keyless1 = await charge({ card: "tok_visa", amount: 2500 });
    const keyless2 = await charge({ card: "tok_visa", amount: 2500 }); // the retry
    const purchase = await charge({ card: "tok_mastercard", amount: 2500 }); // a second purchase, same amount
    const keyed1 = await charge({ key: randomUUID(), card: "tok_amex", amount: 4000 });
    const keyed2 = await charge({ key: randomUUID(), card: "tok_amex", amount: 4000 }); // its retry, new key

    await scanForDuplicates({ now: new Date(Date.now() + 10_000) });
    const pairs = await db.possibleDuplicateCharge.findMany({ where: { customerId: customer } });
    const evidenceOf = Object.fromEntries(pairs.map((p) => [p.chargeId, [p.earlierChargeId, p.evidence]]));
    assert.deepEqual(evidenceOf, {
      [keyless2]: [keyless1, "keyless_retry"],
      [purchase]: [keyless2, "two_purchases"],
      [keyed2]: [keyed1, "new_key_retry"],
    });
    // The requests are kept with the pair (they outlive the records), side by side.
    const kept = JSON.parse(pairs.find((p) => p.chargeId === keyed2)!.requests!);
    assert.notEqual(kept.later.idempotencyKey, kept.earlier.idempotencyKey);
    assert.equal(kept.later.requestHash, kept.earlier.requestHash);
    assert.equal(kept.later.fields.customer_id, customer);
    assert.equal(kept.later.fields.card_token, undefined, "never the card token");

    const s = createCaller(createInnerTRPCContext({ user: await support() }));
    const incident = await s.customers.incident({ since: started, until: new Date(Date.now() + 60_000) });
    const ours = incident.customers.find((c) => c.customerId === customer)!;
    assert.deepEqual(Object.fromEntries(ours.pairs.map((p) => [p.id, p.evidence.key])), {
      [keyed2]: "new_key_retry",
      [keyless2]: "keyless_retry",
    });
    assert.ok(ours.pairs.every((p) => p.gapMs >= 0 && p.gapMs < 60_000));
    assert.ok(incident.histogram.reduce((n, b) => n + b.pairs, 0) >= 2);
    const { csv } = await s.customers.incidentCsv({ since: started, until: new Date(Date.now() + 60_000) });
    assert.equal(csv.split("\r\n").filter((l) => l.startsWith(`${customer},`)).length, 2);
    // A range before the charges has none of them; an impossible range is refused.
    const before = await s.customers.incident({ since: new Date(started.getTime() - 3_600_000), until: started });
    assert.equal(
      before.customers.find((c) => c.customerId === customer),
      undefined,
    );
    await assert.rejects(s.customers.incident({ since: new Date(), until: started }), /start before it ends/);

    const likely = await s.customers.duplicates({ evidence: "likely", since: started });
    assert.deepEqual(
      likely.items
        .filter((i) => i.customerId === customer)
        .map((i) => i.id)
        .sort(),
      [keyed2, keyless2].sort(),
    );

    // The customer page highlights the two retries and their originals, not the second purchase.
    const page = await s.customers.charges({ customerId: customer });
    const flagged = page.charges.filter((c) => c.possibleDuplicateOf?.evidence.likely).map((c) => c.id);
    assert.deepEqual(flagged.sort(), [keyed1, keyed2, keyless1, keyless2].sort());
    assert.equal(page.charges.find((c) => c.id === purchase)!.possibleDuplicateOf?.evidence.key, "two_purchases");
    // Between two times: only the charges made in it.
    const firstTwo = page.charges.filter((c) => c.id === keyless1 || c.id === keyless2);
    const narrowed = await s.customers.charges({
      customerId: customer,
      since: new Date(Math.min(...firstTwo.map((c) => c.createdAt.getTime()))),
      until: new Date(Math.max(...firstTwo.map((c) => c.createdAt.getTime()))),
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
