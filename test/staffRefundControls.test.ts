/**
 * Refunds people make in the dashboard, through the real server (issue 43, items 1 to 3): each audited once with
 * who, what, why and the outcome, however it finishes (here: by the sweeper); keys no API client can take; and
 * the controls: a second factor, per-person limits, and four eyes above a threshold (on an instance of its own
 * with tight settings; the suite's own app has them wide open).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generateSecret } from "otplib";
import { intentionKey } from "~/server/refunds/fromDashboard";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import {
  closeConnections,
  db,
  gatewayRefunds,
  newApiClient,
  newCharge,
  postRefund,
  recordOf,
  startAppInstance,
  sweepUntil,
} from "./helpers";
import { type Browser, createStaffAccount, signedIn } from "./staffHttp";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("staff refund controls")));
after(closeConnections);

const refundInput = (chargeId: string, note: string, extra: Record<string, unknown> = {}) => ({
  chargeId,
  seenRefundedCents: 0,
  reason: "requested_by_customer",
  note,
  ...extra,
});

/** The audit entries about this charge with this action, their details parsed. */
async function auditOf(chargeId: string, action: string) {
  const rows = await db.auditEvent.findMany({ where: { targetId: chargeId, action }, orderBy: { id: "asc" } });
  return rows.map((r) => ({ ...r, details: JSON.parse(r.details ?? "{}") as Record<string, any> }));
}

describe("a dashboard refund is audited once, however it finishes", () => {
  test("slower than the request: finished by the sweeper, one entry with the outcome; a replay adds none", async () => {
    const account = await createStaffAccount("support");
    const support = await signedIn(account);
    // The simulator makes this charge's refunds in 8 s: past the app's gateway timeout (5 s in tests).
    const chargeId = await newCharge(apiKey, { amount_cents: 1200, card_token: "tok_refund_slow_8000" });
    const input = refundInput(chargeId, "customer asked, slow gateway");
    const first = await support.mutate("refunds.create", input);
    assert.ok(first.error, "the request itself could not tell the outcome");
    const key = intentionKey(input);
    await sweepUntil(
      "the sweeper to finish the refund",
      async () => (await recordOf(key, REFUNDS_ROUTE))?.phase.name === "complete",
      30_000,
    );
    const record = await recordOf(key, REFUNDS_ROUTE);
    const finishedBy = record?.phase.name === "complete" ? record.phase.finishedBy : null;
    assert.notEqual(finishedBy, "request", "the sweeper finished it");
    // The gateway made it (reconciled) or, its deadline passed, refused it (abandoned): either way one entry says so.
    const madeAtGateway = (await gatewayRefunds(chargeId)).length;
    const entries = [...(await auditOf(chargeId, "refund.created")), ...(await auditOf(chargeId, "refund.failed"))];
    assert.equal(entries.length, 1, "exactly one entry");
    const [entry] = entries;
    assert.equal(entry!.action, madeAtGateway === 1 ? "refund.created" : "refund.failed");
    assert.equal(entry!.actorStaffId, account.id);
    assert.equal(entry!.actorLabel, account.email);
    assert.equal(entry!.details.finished_by, finishedBy);
    assert.equal(entry!.details.outcome, madeAtGateway === 1 ? "refunded" : "not_refunded");
    if (madeAtGateway === 1) assert.match(entry!.details.refund, /^re_/);
    assert.equal(entry!.details.amount_cents, 1200);
    assert.equal(entry!.details.reason, "requested_by_customer");
    assert.equal(entry!.details.note, "customer asked, slow gateway");
    assert.equal(entry!.ipAddress, support.address);

    // The same click again (a second tab): told what it came to; no second entry, no second refund.
    const again = await support.mutate("refunds.create", input);
    if (madeAtGateway === 1) assert.equal(again.data?.replayed, true, JSON.stringify(again.error));
    const after = [...(await auditOf(chargeId, "refund.created")), ...(await auditOf(chargeId, "refund.failed"))];
    assert.equal(after.length, 1);
    assert.equal((await gatewayRefunds(chargeId)).length, madeAtGateway);
  });
});

describe("the dashboard's refund keys", () => {
  test("no API client can take one first: the API refuses the dashboard's key space", async () => {
    const chargeId = await newCharge(apiKey, { amount_cents: 800 });
    const input = refundInput(chargeId, "customer asked");
    // Another API client that knows the charge id computes the key the dashboard will use and tries it first.
    const intruder = await newApiClient("intruder");
    const taken = await postRefund({ apiKey: intruder.apiKey, key: intentionKey(input), body: { charge: chargeId } });
    assert.equal(taken.status, 400, taken.text);
    assert.equal(taken.json.error.code, "invalid_idempotency_key");
    const own = await postRefund({ apiKey, key: `dashboard:${chargeId}`, body: { charge: chargeId } });
    assert.equal(own.status, 400, "nor the charge's own client");
    // Support's refund goes through.
    const support = await signedIn(await createStaffAccount("support"));
    const made = await support.mutate("refunds.create", input);
    assert.equal(made.data?.status, "refunded", JSON.stringify(made.error));
  });
});

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 16;
const CONTROLLED = `http://127.0.0.1:${PORT}`;
const CONTROLS = {
  STAFF_REFUND_REQUIRE_2FA: "true",
  STAFF_REFUND_MAX_PER_HOUR: "3",
  STAFF_REFUND_MAX_PER_DAY: "5",
  STAFF_REFUND_MAX_CENTS_PER_HOUR: "5000",
  STAFF_REFUND_MAX_CENTS_PER_DAY: "8000",
  STAFF_REFUND_APPROVAL_ABOVE_CENTS: "2000",
};

describe("controls on staff refunds (an instance with a second factor, limits and four eyes)", () => {
  let app: Awaited<ReturnType<typeof startAppInstance>>;
  before(async () => {
    app = await startAppInstance(PORT, CONTROLS);
  });
  after(() => app?.stop());

  /** A staff member with a second factor, signed in with it on the controlled instance. */
  async function withSecondFactor(role: "support" | "engineer" = "support") {
    const totpSecret = generateSecret();
    const account = await createStaffAccount(role, { totpSecret });
    return { account, browser: await signedIn(account, { totpSecret, baseUrl: CONTROLLED }) };
  }

  test("a second factor: a password alone refunds nothing", async () => {
    const support = await signedIn(await createStaffAccount("support"), { baseUrl: CONTROLLED });
    const chargeId = await newCharge(apiKey, { amount_cents: 500 });
    const refused = await support.mutate("refunds.create", refundInput(chargeId, "no second factor"));
    assert.equal(refused.status, 400);
    assert.match(refused.error!.message, /two-factor/);
    assert.equal((await gatewayRefunds(chargeId)).length, 0);
    const controls = await support.query("refunds.controls");
    assert.equal(controls.data.requireSecondFactor, true);
    assert.equal(controls.data.secondFactorPassed, false);
  });

  test("per-person limits hold for refunds sent at once: 10 at once, 3 made; refused ones audited", async () => {
    const { account, browser } = await withSecondFactor();
    const charges = await Promise.all(Array.from({ length: 10 }, () => newCharge(apiKey, { amount_cents: 500 })));
    const answers = await Promise.all(charges.map((c) => browser.mutate("refunds.create", refundInput(c, "burst"))));
    const made = answers.filter((a) => a.data?.status === "refunded");
    assert.equal(made.length, 3, JSON.stringify(answers.map((a) => a.error?.message ?? a.data?.status)));
    for (const refused of answers.filter((a) => a.error)) {
      assert.equal(refused.status, 429);
      assert.match(refused.error!.message, /at most 3 refunds an hour/);
    }
    const limited = await db.auditEvent.count({ where: { action: "refund.limited", actorStaffId: account.id } });
    assert.equal(limited, 7);
    const controls = await browser.query("refunds.controls");
    assert.deepEqual(controls.data.usage.hour, { count: 3, cents: 1500 });
    assert.deepEqual(controls.data.perHour, { count: 3, cents: 5000 });
    let gatewayMade = 0;
    for (const c of charges) gatewayMade += (await gatewayRefunds(c)).length;
    assert.equal(gatewayMade, 3);
  });

  test("the amount limit: a refund that would take the hour over it is refused", async () => {
    const { browser } = await withSecondFactor();
    const charges = await Promise.all(Array.from({ length: 3 }, () => newCharge(apiKey, { amount_cents: 2000 })));
    assert.equal((await browser.mutate("refunds.create", refundInput(charges[0]!, "one"))).data?.status, "refunded");
    assert.equal((await browser.mutate("refunds.create", refundInput(charges[1]!, "two"))).data?.status, "refunded");
    const third = await browser.mutate("refunds.create", refundInput(charges[2]!, "three"));
    assert.equal(third.status, 429);
    assert.match(third.error!.message, /at most 50\.00 an hour/);
  });

  test("four eyes: a large refund waits; another person (never its requester) approves; made once", async () => {
    const requester = await withSecondFactor();
    const approver = await withSecondFactor("engineer");
    const chargeId = await newCharge(apiKey, { amount_cents: 3000 });
    const asked = await requester.browser.mutate("refunds.create", refundInput(chargeId, "large, customer disputed"));
    assert.equal(asked.data?.status, "awaiting_approval", JSON.stringify(asked.error));
    const id = asked.data.requestId as string;
    assert.equal((await gatewayRefunds(chargeId)).length, 0, "nothing refunded yet");
    const pending = (await approver.browser.query("refunds.awaitingApproval")).data as { id: string }[];
    assert.ok(pending.some((p) => p.id === id));

    const own = await requester.browser.mutate("refunds.approve", { id });
    assert.equal(own.status, 409);
    assert.match(own.error!.message, /Nobody approves their own/);

    const [approved, twice] = await Promise.all([
      approver.browser.mutate("refunds.approve", { id }),
      approver.browser.mutate("refunds.approve", { id }),
    ]);
    assert.equal(approved.data?.status, "refunded", JSON.stringify(approved.error));
    assert.equal(twice.data?.status, "refunded", JSON.stringify(twice.error));
    assert.equal((await gatewayRefunds(chargeId)).length, 1, "made once");
    assert.equal((await auditOf(chargeId, "refund.requested")).length, 1);
    assert.equal((await auditOf(chargeId, "refund.approved")).length, 1);
    const [created] = await auditOf(chargeId, "refund.created");
    assert.equal(created!.actorStaffId, requester.account.id);
    assert.equal(created!.details.approved_by, approver.account.email);
    assert.equal(created!.details.outcome, "refunded");
    const left = (await approver.browser.query("refunds.awaitingApproval")).data as { id: string }[];
    assert.ok(!left.some((p) => p.id === id));
  });

  test("four eyes: a rejected request is never sent", async () => {
    const requester = await withSecondFactor();
    const reviewer = await withSecondFactor();
    const chargeId = await newCharge(apiKey, { amount_cents: 2500 });
    const input = refundInput(chargeId, "large");
    const asked = await requester.browser.mutate("refunds.create", input);
    const rejected = await reviewer.browser.mutate("refunds.reject", { id: asked.data.requestId, note: "not ours" });
    assert.equal(rejected.data?.status, "rejected");
    const approveLater = await reviewer.browser.mutate("refunds.approve", { id: asked.data.requestId });
    assert.equal(approveLater.status, 409);
    const askAgain = await requester.browser.mutate("refunds.create", input);
    assert.equal(askAgain.status, 409);
    assert.equal((await gatewayRefunds(chargeId)).length, 0);
    assert.equal((await auditOf(chargeId, "refund.rejected")).length, 1);
  });
});

export type { Browser };
