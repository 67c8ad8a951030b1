/**
 * A double charge is one case with two charges (issue 40): refunding one half from the dashboard resolves it for
 * everyone, the other half says which charge was refunded, when, by whom and with which note, and refusing its
 * refund without the override; with it, both halves are refunded and audited as such. A second confirm of the same
 * refund (a second tab) is told it was done and keeps its note; two people refunding the two halves at the same
 * moment refund one; a refused refund leaves the case open. Through the dashboard's own procedures, in-process,
 * against the real database and gateway.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { SessionUser } from "~/server/auth/session";
import { scanForDuplicates } from "~/server/customers/duplicates";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { chargeBody, closeConnections, db, gatewayRefunds, newApiClient, postCharge, waitFor } from "./helpers";

after(closeConnections);

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("double charges")));

async function staff(name: string): Promise<SessionUser> {
  const u = await db.staffUser.create({
    data: { email: `${name}-${randomUUID()}@example.com`, name, role: "support", passwordHash: "x" },
  });
  return { id: u.id, email: u.email, name: u.name, role: u.role };
}

const as = async (name: string) => createCaller(createInnerTRPCContext({ user: await staff(name) }));

/**
 * The founding incident in small: a keyless request to a slow gateway, its client gives up and sends it again.
 * Both are charged: [first, retry].
 */
async function keylessDoubleCharge(customer: string): Promise<[string, string]> {
  const body = chargeBody({ customer_id: customer, card_token: "tok_slow_2000", amount_cents: 2500 });
  const client = new AbortController();
  const sent = postCharge({ apiKey, body, signal: client.signal }).catch(() => null);
  // It gives up once its request holds a record (a request gone before its claim is not worked on).
  await waitFor("the request's record", () => db.idempotentRequest.count({ where: { customerId: customer } }));
  client.abort();
  assert.equal(await sent, null);
  const retry = await postCharge({ apiKey, body });
  assert.equal(retry.status, 201, retry.text);
  for (let i = 0; i < 100 && (await db.charge.count({ where: { customerId: customer } })) < 2; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const first = await db.charge.findFirstOrThrow({ where: { customerId: customer, NOT: { id: retry.json.id } } });
  return [first.id, retry.json.id];
}

/** The refund was made (not sent for approval: these amounts are under the test stack's threshold). */
function refunded<R extends { status: string }>(result: R): Extract<R, { status: "refunded" }> {
  assert.equal(result.status, "refunded");
  return result as Extract<R, { status: "refunded" }>;
}

const refund = (chargeId: string, note: string, extra: { bothHalves?: boolean; amountCents?: number } = {}) => ({
  chargeId,
  seenRefundedCents: 0,
  reason: "duplicate" as const,
  note,
  ...extra,
});

describe("a double charge refunded once per case", () => {
  test("one half refunded: the other says so and needs the override; with it, both, audited", async () => {
    const started = new Date(Date.now() - 1_000);
    const customer = `cus_case_${randomUUID().slice(0, 8)}`;
    const [first, retry] = await keylessDoubleCharge(customer);
    await new Promise((r) => setTimeout(r, 1_500)); // the events are written within a second
    await scanForDuplicates({ now: new Date(Date.now() + 10_000) });
    const sam = await as("Sam");
    const range = { since: started, until: new Date(Date.now() + 60_000) };
    const leftOf = async () => {
      const ours = (await sam.customers.incident(range)).cases.filter((c) => c.customerId === customer);
      assert.equal(ours.length, 1);
      return ours[0]!;
    };
    assert.equal((await leftOf()).status.leftCents, 2500);

    const made = refunded(await sam.refunds.create(refund(retry, "charged twice: keyless retry 0.5 s apart")));
    assert.equal(made.replayed, false);
    // The case is done for everyone, as the incident view and the other half's page say.
    const done = await leftOf();
    assert.deepEqual([done.status.state, done.status.leftCents], ["refunded", 0]);
    assert.equal(done.status.firstRefund?.chargeId, retry);
    const twin = await sam.refunds.ofCharge({ chargeId: first });
    assert.equal(twin.cases.length, 1);
    const told = twin.cases[0]!.status.firstRefund!;
    assert.equal(told.chargeId, retry);
    assert.match(told.by, /^Sam \(/);
    assert.equal(told.notes[0]?.note, "charged twice: keyless retry 0.5 s apart");
    assert.deepEqual(
      told.notes.map((n) => n.kind),
      ["refund"],
    );

    // The other half: refused without the override, saying what was done.
    const alex = await as("Alex");
    await assert.rejects(alex.refunds.create(refund(first, "refund this one too")), (e: Error) => {
      assert.match(e.message, new RegExp(`${retry} was refunded by Sam .*charged twice: keyless retry`));
      assert.match(e.message, /needs the override/);
      return true;
    });
    assert.equal((await db.charge.findUniqueOrThrow({ where: { id: first } })).amountRefundedCents, 0);
    // With it: refunded, noted as both halves, audited as the override.
    const both = refunded(await alex.refunds.create(refund(first, "customer disputed both", { bothHalves: true })));
    const audit = await db.auditEvent.findFirstOrThrow({ where: { action: "refund.created", targetId: first } });
    const details = JSON.parse(audit.details!);
    assert.equal(details.override, "both halves of a double charge refunded");
    assert.deepEqual(details.bothHalves, [{ case: [first, retry].sort().join(" "), otherCharge: retry }]);
    const note = await db.refundNote.findFirstOrThrow({ where: { refundId: both.refundId } });
    assert.equal(note.kind, "both_halves");
    assert.equal((await leftOf()).status.state, "both_refunded");
    assert.equal((await gatewayRefunds(first)).length + (await gatewayRefunds(retry)).length, 2);
  });

  test("a second tab's confirm of the same refund is told it was done, and its note is kept", async () => {
    const [, retry] = await keylessDoubleCharge(`cus_tab_${randomUUID().slice(0, 8)}`);
    const sam = await as("Sam");
    const alex = await as("Alex");
    const made = refunded(await sam.refunds.create(refund(retry, "refunding the double charge")));
    // Alex's tab still showed nothing refunded: the same intention, the same refund.
    const again = refunded(await alex.refunds.create(refund(retry, "customer called about this")));
    assert.deepEqual(again, { status: "refunded", refundId: made.refundId, replayed: true });
    // A double click of the same words adds nothing.
    await alex.refunds.create(refund(retry, "customer called about this"));
    const shown = await sam.refunds.ofCharge({ chargeId: retry });
    assert.equal(shown.refunds.length, 1);
    assert.deepEqual(
      shown.refunds[0]!.notes.map((n) => [n.kind, n.note]),
      [
        ["refund", "refunding the double charge"],
        ["again", "customer called about this"],
      ],
    );
    assert.match(shown.refunds[0]!.by, /^Sam \(/);
    assert.equal((await gatewayRefunds(retry)).length, 1);
  });

  test("two people refunding the two halves at once, before any scan, refund one", async () => {
    const [first, retry] = await keylessDoubleCharge(`cus_race_${randomUUID().slice(0, 8)}`);
    const [sam, alex] = [await as("Sam"), await as("Alex")];
    const results = await Promise.allSettled([
      sam.refunds.create(refund(first, "double charge")),
      alex.refunds.create(refund(retry, "double charge")),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
    const refused = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    assert.match(refused.reason.message, /needs the override/);
    assert.equal((await gatewayRefunds(first)).length + (await gatewayRefunds(retry)).length, 1);
  });

  test("a refused refund leaves the case open: the other half is refunded without the override", async () => {
    const [first, retry] = await keylessDoubleCharge(`cus_refused_${randomUUID().slice(0, 8)}`);
    const sam = await as("Sam");
    await assert.rejects(sam.refunds.create(refund(first, "too much", { amountCents: 9_999 })));
    const made = refunded(await sam.refunds.create(refund(retry, "the retry")));
    assert.equal(made.replayed, false);
    assert.equal((await gatewayRefunds(first)).length, 0);
  });
});
