/**
 * The ledger reconciliation against the real gateway and database: a clean
 * ledger reconciles to nothing, a provable gap is repaired, and every kind of
 * mismatch is found (each injected here, then undone, so that the test run's
 * own closing reconciliation finds nothing).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { env } from "~/env";
import { db } from "~/server/db";
import { gateway } from "~/server/gateway";
import { findRecord } from "~/server/idempotency/reading";
import { healingKeys } from "~/server/ledger/healLateCharge";
import { describeCounts, reconcileLedger } from "~/server/ledger/reconcile";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { serverScriptArgs } from "../scripts/lib/processes";
import {
  chargeAtGateway,
  chargeBody,
  closeConnections,
  gatewayCharges,
  gatewayRefunds,
  lateRefund as lateRefundHelper,
  lateRefund as lateRefundOf,
  localCharges,
  newApiClient,
  newCharge,
  postCharge,
  postRefund,
  recordOf,
  refundedOf,
  removeGatewayCharges,
  seedRecord,
  startAppInstance,
  sweepUntil,
  uniqueKey,
  untilGatewayShowsCharge,
  waitFor,
} from "./helpers";
import * as mariadb from "mariadb";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { randomBytes } from "node:crypto";
import { pruneExpired } from "~/server/sweep/pruneExpired";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { delayingProxy } from "./delayingProxy";

let apiKey: string;
let clientId: number;
before(async () => ({ apiKey, id: clientId } = await newApiClient("ledger")));
after(closeConnections);

const kinds = (findings: { kind: string }[]) => findings.map((f) => f.kind).sort();
const since = () => new Date(Date.now() - 60_000);
/**
 * A window that ends a little in the future: Stripe's `created` is whole seconds and the adapter floors the
 * window to them, so a window ending now would leave this second's charges for the next run.
 */
const reconcile = (from: Date) => reconcileLedger({ since: from, until: new Date(Date.now() + 2_000) });
const show = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? String(x) : x));

describe("ledger reconciliation", () => {
  test("charges made through the API reconcile to nothing", async () => {
    const start = new Date(Date.now() - 1_000);
    for (const card of ["tok_visa", "tok_declined", "tok_visa"])
      await postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ card_token: card }) });
    await postCharge({ apiKey, body: chargeBody() }); // keyless
    const result = await reconcile(start);
    assert.ok(result.gatewayCharges >= 4 && result.appCharges >= 4, show(result));
    assert.deepEqual(result.findings, []);
  });

  test("a gateway charge of a released record is repaired: the charge recorded, the record completed", async () => {
    const key = uniqueKey("repair");
    const body = chargeBody({ card_token: "tok_charge_then_error" }); // charged, then answered 500
    assert.equal((await postCharge({ apiKey, key, body })).status, 503);
    assert.equal((await recordOf(key))?.phase.name, "released");
    const result = await reconcile(since());
    // This one at least: the window (the last minute) may hold what the file run before this one left released.
    assert.ok(result.repaired >= 1, show(result));
    assert.deepEqual(result.findings, []);
    const record = await recordOf(key);
    assert.equal(record?.phase.name === "complete" && record.phase.finishedBy, "reconciled");
    assert.equal((await localCharges(body.customer_id)).length, 1);
    const retry = await postCharge({ apiKey, key, body });
    assert.equal(retry.status, 201, "the client's retry gets the real answer");
  });

  test("app charges missing from the gateway's list of the window are counted by why, and not reported", async () => {
    // A charge made through the API, then moved into a window that starts after its gateway charge was made
    // (a whole second later: Stripe's `created` is whole seconds).
    const body = chargeBody();
    await postCharge({ apiKey, key: uniqueKey(), body });
    const [older] = await localCharges(body.customer_id);
    await sleep(1_100);
    const start = new Date();
    await db.charge.update({ where: { id: older!.id }, data: { createdAt: new Date(start.getTime() + 1) } });
    // A decline the gateway kept nothing of (Stripe refuses a payment method it does not know without an object).
    const declined = await db.charge.create({
      data: {
        id: `ch_unlisted_${Date.now()}`,
        apiClientId: clientId,
        customerId: "cus_ledger_unlisted",
        amountCents: 500,
        currency: "usd",
        status: "failed",
        failureCode: "card_declined",
        gatewayChargeId: "",
        gatewayIdempotencyKey: `gk_unlisted_${uniqueKey()}`,
      },
    });
    try {
      // A lookup by key that lags (Stripe's search) proves nothing until its window has passed.
      if (env.GATEWAY === "stripe") await sleep(env.STRIPE_SEARCH_CONSISTENCY_MS);
      const result = await reconcile(start);
      assert.deepEqual(result.findings, [], show(result));
      assert.deepEqual(result.unlisted, { declined: 1, olderThanWindow: 1 }, show(result));
      assert.match(
        describeCounts(result),
        /not in the gateway's list of the window: 1 declined with nothing kept at the gateway, 1 charged at the/,
      );
    } finally {
      await db.charge.delete({ where: { id: declined.id } });
      await db.charge.update({ where: { id: older!.id }, data: { createdAt: older!.createdAt } });
    }
  });

  test("finds every kind of mismatch, stores it with its evidence, and resolves it once it is put right", async () => {
    const start = new Date(Date.now() - 1_000);
    // What this test plants is undone in `finally`, whatever fails: the run's closing reconciliation must find
    // only what the rest of the run did.
    const planted: string[] = [];
    const undo: (() => Promise<unknown>)[] = [];
    try {
      // 1. Money the app does not know of: a gateway charge under a key no record owns.
      const stranger = await gateway.charge(
        {
          amountCents: 700,
          currency: "usd",
          cardToken: "tok_visa",
          customerId: "cus_ledger_stranger",
          metadata: { requestId: "0", apiClientId: String(clientId), idempotencyKey: null },
        },
        { idempotencyKey: `gk_stranger_${uniqueKey()}`, timeoutMs: 5_000 },
      );
      planted.push(stranger.id);
      // 2. A charge the app invented: its row names a gateway key the gateway never saw.
      const invented = chargeBody();
      const made = await postCharge({ apiKey, key: uniqueKey(), body: invented });
      const [real] = await localCharges(invented.customer_id);
      await db.charge.update({
        where: { id: real!.id },
        data: { gatewayIdempotencyKey: `gk_invented_${uniqueKey()}` },
      });
      undo.push(() =>
        db.charge.update({ where: { id: real!.id }, data: { gatewayIdempotencyKey: real!.gatewayIdempotencyKey } }),
      );
      // 3. An amount that differs.
      const altered = chargeBody();
      await postCharge({ apiKey, key: uniqueKey(), body: altered });
      const [alteredCharge] = await localCharges(altered.customer_id);
      await db.charge.update({ where: { id: alteredCharge!.id }, data: { amountCents: 1 } });
      undo.push(() =>
        db.charge.update({ where: { id: alteredCharge!.id }, data: { amountCents: alteredCharge!.amountCents } }),
      );
      // 4. Two gateway charges for one operation (what deleting an in-progress record used to cause).
      const doubled = uniqueKey("doubled");
      const twice = await Promise.all(
        [1, 2].map((n) =>
          gateway.charge(
            {
              amountCents: 900,
              currency: "usd",
              cardToken: "tok_visa",
              customerId: "cus_ledger_doubled",
              metadata: { requestId: `99999999${n}`, apiClientId: String(clientId), idempotencyKey: doubled },
            },
            { idempotencyKey: `gk_doubled_${n}_${doubled}`, timeoutMs: 5_000 },
          ),
        ),
      );
      planted.push(...twice.map((c) => c.id));

      // Stripe's search lags: until its consistency window has passed since the invented charge was made, the
      // reconciliation cannot prove that charge missing and rightly leaves it for a later run.
      if (env.GATEWAY === "stripe") await sleep(env.STRIPE_SEARCH_CONSISTENCY_MS);
      const found = await reconcile(start);
      assert.deepEqual(kinds(found.findings), [
        "amount_or_currency_mismatch",
        "app_charge_without_gateway_charge",
        // The stranger, the two doubled charges (their metadata names no record), and the invented row's real
        // gateway charge, whose record completed without it.
        "gateway_charge_without_app_charge",
        "gateway_charge_without_app_charge",
        "gateway_charge_without_app_charge",
        "gateway_charge_without_app_charge",
        "several_gateway_charges_for_one_operation",
      ]);
      assert.ok(
        found.findings.some((f) => f.kind === "gateway_charge_without_app_charge" && f.gatewayChargeId === stranger.id),
      );
      assert.ok(
        found.findings.some((f) => f.kind === "app_charge_without_gateway_charge" && f.chargeId === made.json.id),
      );
      assert.ok(
        found.findings.some((f) => f.kind === "amount_or_currency_mismatch" && f.chargeId === alteredCharge!.id),
      );
      // Either of the two is "the second": they were made at once, and Stripe's `created` is whole seconds.
      assert.ok(
        found.findings.some(
          (f) =>
            f.kind === "several_gateway_charges_for_one_operation" && twice.some((c) => c.id === f.gatewayChargeId),
        ),
      );

      // The dashboard reads them, with their evidence.
      const support = await db.staffUser.create({
        data: { email: `ledger-${uniqueKey()}@example.com`, name: "L", role: "support", passwordHash: "x" },
      });
      const caller = createCaller(
        createInnerTRPCContext({ user: { id: support.id, email: support.email, name: support.name, role: "support" } }),
      );
      const listed = await caller.ledger.mismatches({ limit: 100 });
      const stored = listed.items.find((m) => m.gatewayChargeId === stranger.id);
      assert.equal(stored?.kind, "gateway_charge_without_app_charge");
      assert.equal((stored?.evidence.gateway as { amount_cents: number } | undefined)?.amount_cents, 700);
      assert.ok((await caller.ledger.status()).openMismatches >= found.findings.length);

      // Put right what the app can: the next run finds those in order and resolves them.
      for (const put of undo.splice(0)) await put();
      const again = await reconcile(start);
      assert.deepEqual(kinds(again.findings), [
        "gateway_charge_without_app_charge",
        "gateway_charge_without_app_charge",
        "gateway_charge_without_app_charge",
        "several_gateway_charges_for_one_operation",
      ]);
      const fixed = await db.ledgerMismatch.findMany({
        where: { chargeId: { in: [made.json.id, alteredCharge!.id] } },
      });
      assert.equal(fixed.length, 2);
      assert.ok(
        fixed.every((m) => m.resolvedAt !== null),
        "the findings that were put right are resolved",
      );

      // The stranger's money is for people to refund: an engineer closes it with a note; support may not.
      const open = (await caller.ledger.mismatches({ limit: 100 })).items.find(
        (m) => m.gatewayChargeId === stranger.id,
      )!;
      await assert.rejects(caller.ledger.resolve({ id: open.id, note: "refunded" }), /engineers/i);
      const engineer = await db.staffUser.create({
        data: { email: `ledger-e-${uniqueKey()}@example.com`, name: "E", role: "engineer", passwordHash: "x" },
      });
      const asEngineer = createCaller(
        createInnerTRPCContext({
          user: { id: engineer.id, email: engineer.email, name: engineer.name, role: "engineer" },
        }),
      );
      await asEngineer.ledger.resolve({ id: open.id, note: "refunded at the provider, ticket 42" });
      const closed = await db.ledgerMismatch.findUniqueOrThrow({ where: { id: BigInt(open.id) } });
      assert.equal(closed.resolutionNote, "refunded at the provider, ticket 42");
      assert.equal(closed.resolvedBy, engineer.id);
      // Closing is audited: who, which mismatch, the note.
      const audited = await db.auditEvent.findFirst({
        where: { action: "ledger_mismatch.resolved", targetId: open.id },
      });
      assert.equal(audited?.actorStaffId, engineer.id);
      assert.equal(JSON.parse(audited!.details!).note, "refunded at the provider, ticket 42");
      await assert.rejects(
        asEngineer.ledger.resolve({ id: open.id, note: "twice" }),
        /No open mismatch/,
        "a closed mismatch is not closed again",
      );
    } finally {
      for (const put of undo) await put();
      // Out of the way of the run's closing reconciliation: these charges were never the app's.
      await removeGatewayCharges(planted);
      await db.ledgerMismatch.updateMany({
        where: { resolvedAt: null, gatewayChargeId: { in: planted } },
        data: { resolvedAt: new Date() },
      });
    }
  });
});

describe("healing a late charge", () => {
  /** An operation the sweeper wrote off ("no charge was made"), then charged at the gateway under its key. */
  async function lateCharge(card = "tok_visa") {
    const body = chargeBody({ card_token: card });
    const record = await seedRecord({
      apiClientId: clientId,
      phase: "complete",
      body,
      ageMs: 5_000,
      finishedBy: "abandoned",
      response: { status: 500, body: '{"error":{"code":"request_abandoned"}}' },
    });
    const late = await chargeAtGateway(record, body);
    await untilGatewayShowsCharge(record);
    return { record, late };
  }

  test("refunded under the operation's healing key, recorded, audited, the mismatch healed", async () => {
    const { record, late } = await lateCharge();
    const first = await reconcile(since());
    assert.equal(first.healed, 1, show(first));
    assert.deepEqual(first.findings, [], "healed, not left open");
    const charge = await db.charge.findFirstOrThrow({ where: { gatewayChargeId: late.id } });
    assert.equal(charge.idempotentRequestId, record.id);
    assert.equal(charge.amountRefundedCents, charge.amountCents);
    const [refund, ...more] = await db.refund.findMany({ where: { chargeId: charge.id } });
    assert.equal(more.length, 0);
    assert.equal(refund!.gatewayIdempotencyKey, healingKeys(record)[0]);
    const atGateway = await gatewayRefunds(charge.id);
    assert.deepEqual(
      atGateway.map((r) => r.amount),
      [late.amountCents],
      "one refund at the gateway, in full",
    );
    const mismatch = await db.ledgerMismatch.findFirstOrThrow({ where: { gatewayChargeId: late.id } });
    assert.equal(mismatch.healedRefundId, refund!.id);
    assert.ok(mismatch.resolvedAt);
    const audit = await db.auditEvent.findFirstOrThrow({
      where: { action: "ledger.late_charge_healed", targetId: charge.id },
    });
    assert.equal(audit.actorType, "system");
    // The merchant was told "no charge was made": its event says what the charge was, and that it came back.
    const [healedEvent, ...moreEvents] = await db.event.findMany({ where: { chargeId: charge.id } });
    assert.equal(moreEvents.length, 0);
    assert.equal(healedEvent!.type, "charge.late_healed");
    assert.equal(healedEvent!.requestId, record.id);
    assert.equal(JSON.parse(healedEvent!.data).amount_refunded_cents, charge.amountCents);
    const again = await reconcile(since());
    assert.equal(again.healed, 0, "healed once");
    assert.equal(await db.event.count({ where: { chargeId: charge.id } }), 1, "told once");
    assert.deepEqual(again.findings, []);
    assert.equal((await gatewayRefunds(charge.id)).length, 1);
  });

  test("a heal the gateway refuses under every key leaves the finding open, and the run goes on", async () => {
    // Every refund of this charge fails at the gateway (500, nothing refunded); Stripe would replay that 500 to
    // every later request under the same key, which is why a heal has more than one.
    const { late } = await lateCharge("tok_refund_error");
    try {
      const result = await reconcile(since());
      assert.equal(result.healed, 0);
      const finding = result.findings.find((f) => f.gatewayChargeId === late.id);
      assert.equal(finding?.kind, "gateway_charge_without_app_charge");
      assert.equal(await db.charge.count({ where: { gatewayChargeId: late.id } }), 0);
    } finally {
      // Out of the way of the run's closing reconciliation: nothing can heal it.
      await removeGatewayCharges([late.id]);
      await db.ledgerMismatch.updateMany({
        where: { resolvedAt: null, gatewayChargeId: late.id },
        data: { resolvedAt: new Date() },
      });
    }
  });

  test("a late attempt the gateway declined is recorded as the decline it is: nothing to heal or refund", async () => {
    const { record, late } = await lateCharge("tok_declined");
    const result = await reconcile(since());
    assert.equal(result.healed, 0, show(result));
    assert.ok(!result.findings.some((f) => f.gatewayChargeId === late.id), show(result));
    const charge = await db.charge.findFirstOrThrow({ where: { gatewayChargeId: late.id } });
    assert.deepEqual([charge.status, charge.idempotentRequestId], ["failed", record.id]);
    assert.deepEqual(await gatewayRefunds(charge.id), []);
    assert.deepEqual((await reconcile(since())).findings, [], "in order from then on");
  });

  test("with healing switched off the late charge stays open for a person, and nothing is refunded", async () => {
    const { late } = await lateCharge();
    const result = await reconcileLedger({ since: since(), until: new Date(Date.now() + 2_000), heal: false });
    assert.equal(result.healed, 0);
    const finding = result.findings.find((f) => f.gatewayChargeId === late.id);
    assert.equal(finding?.kind, "gateway_charge_without_app_charge");
    assert.equal(await db.charge.count({ where: { gatewayChargeId: late.id } }), 0);
    // Heal it now, so the test run's own closing reconciliation finds the ledger whole.
    assert.equal((await reconcile(since())).healed, 1);
  });

  test("a gateway charge that names no operation of this app is never refunded automatically", async () => {
    const stranger = await gateway.charge(
      {
        amountCents: 777,
        currency: "usd",
        cardToken: "tok_visa",
        customerId: null,
        metadata: { requestId: "999999999", apiClientId: String(clientId), idempotencyKey: null },
      },
      { idempotencyKey: `gk_stranger_${Date.now()}`, timeoutMs: 5_000 },
    );
    await sleep(env.GATEWAY === "stripe" ? 1_500 : 0);
    const result = await reconcile(since());
    assert.ok(result.findings.some((f) => f.gatewayChargeId === stranger.id));
    assert.equal(result.healed, 0);
    await removeGatewayCharges([stranger.id]);
    await reconcile(since());
  });
});

describe("recording a late refund", () => {
  const lateRefund = (amountCents: number) =>
    lateRefundHelper({ apiKey, apiClientId: clientId, chargeCents: 1000, amountCents });

  test("recorded as the operation's refund, its answer corrected, reported for a person; audited", async () => {
    const { charge, record, late } = await lateRefund(300);
    const result = await reconcile(since());
    const reported = result.findings.filter((f) => f.subject === late.id);
    assert.deepEqual(
      reported.map((f) => f.kind),
      ["refund_after_write_off"],
      "reported: the client was told no refund was made, and may have refunded again",
    );
    const [refund, ...more] = await db.refund.findMany({ where: { chargeId: charge.id } });
    assert.equal(more.length, 0);
    assert.deepEqual(
      [refund!.gatewayRefundId, refund!.idempotentRequestId, refund!.amountCents, refund!.reason],
      [late.id, record.id, 300, "duplicate"],
    );
    const money = await refundedOf(charge.id);
    assert.deepEqual([money.refunded, money.held], [300, 0]);
    assert.equal((await gatewayRefunds(charge.id)).length, 1, "nothing refunded again");
    const audit = await db.auditEvent.findFirstOrThrow({
      where: { action: "ledger.late_refund_recorded", targetId: charge.id },
    });
    assert.equal(audit.actorType, "system");
    const lateEvents = await db.event.findMany({ where: { chargeId: charge.id, type: "refund.late_recorded" } });
    assert.deepEqual(
      lateEvents.map((e) => [JSON.parse(e.data).id, e.requestId]),
      [[refund!.id, record.id]],
      "the merchant is told of the refund it was told was not made",
    );
    // Every replay of the operation now tells what happened: the refund.
    const corrected = await findRecord(record.id);
    assert.ok(corrected?.phase.name === "complete" && corrected.phase.finishedBy === "reconciled");
    assert.equal(corrected.phase.response.status, 201);
    assert.equal(JSON.parse(corrected.phase.response.body).id, refund!.id);
    assert.deepEqual((await reconcile(since())).findings, [], "in order from then on");
    assert.equal(await db.refund.count({ where: { chargeId: charge.id } }), 1, "recorded once");
    const open = await db.ledgerMismatch.findMany({ where: { gatewayChargeId: late.id, resolvedAt: null } });
    assert.deepEqual(
      open.map((m) => m.kind),
      ["refund_after_write_off"],
      "open until a person closes it",
    );
  });

  test("while holds in flight leave no room for it, it stays a finding; once they end, it is recorded", async () => {
    const { charge, late } = await lateRefund(600);
    // Another refund holds what is left in the app (its gateway call would now be refused): 600 does not fit.
    await db.charge.update({ where: { id: charge.id }, data: { refundHeldCents: 500 } });
    try {
      const held = await reconcile(since());
      const finding = held.findings.find((f) => f.subject === late.id);
      assert.equal(finding?.kind, "gateway_refund_without_app_refund", show(held.findings));
      assert.equal(await db.refund.count({ where: { chargeId: charge.id } }), 0);
      assert.equal((await refundedOf(charge.id)).refunded, 0, "refunded + held never exceeds the charge");
    } finally {
      await db.charge.update({ where: { id: charge.id }, data: { refundHeldCents: 0 } });
    }
    const later = await reconcile(since());
    assert.deepEqual(
      later.findings.filter((f) => f.subject === late.id).map((f) => f.kind),
      ["refund_after_write_off"],
      show(later.findings),
    );
    assert.equal((await refundedOf(charge.id)).refunded, 600);
  });
});

/**
 * `npm run reconcile` works without flags (the last 24 hours), and refuses a gateway that is not this
 * database's (another stack's simulator), storing nothing and saying why: pointed at one, it once stored that
 * stack's 2,017 charges as this database's mismatches without a word.
 */
describe("the reconciliation checks its gateway", () => {
  const OTHER_PORT = Number(process.env.TEST_GATEWAY_PORT ?? 4110) + 3;
  const otherDatabase = () => {
    const url = new URL(process.env.TEST_GATEWAY_DATABASE_URL!);
    url.pathname = `${url.pathname}_other`;
    return url.toString();
  };
  const cli = (vars: Record<string, string>) =>
    new Promise<{ status: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, serverScriptArgs("scripts/reconcile.ts"), {
        env: { ...process.env, ...vars },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (out += d));
      child.once("exit", (status) => resolve({ status, out }));
    });
  const runs = () => db.reconciliationRun.count();
  const mismatches = () => db.ledgerMismatch.count();

  test("without flags: the last 24 hours, against this database's gateway, whose account it records", async () => {
    await postCharge({ apiKey, key: uniqueKey(), body: chargeBody() });
    const before = await runs();
    const { status, out } = await cli({});
    assert.notEqual(status, 2, out);
    const window = /reconciled (\S+) \.\. (\S+):/.exec(out);
    assert.ok(window, out);
    const hours = (Date.parse(window[2]!) - Date.parse(window[1]!)) / 3_600_000;
    assert.ok(Math.abs(hours - 24) < 0.1, `a window of ${hours} h`);
    assert.equal(await runs(), before + 1);
    const recorded = await db.setting.findUnique({ where: { name: "gateway_identity" } });
    assert.equal(recorded?.value, await gateway.identity());
  });

  test("pointed at another stack's gateway: refused, exit 2, nothing stored, and it says why", async () => {
    const { startGateway } = await import("../scripts/lib/processes");
    const { createDatabase } = await import("../scripts/lib/mariadbServer");
    await createDatabase(otherDatabase(), { dropFirst: true });
    const other = await startGateway({ port: OTHER_PORT, databaseUrl: otherDatabase(), quiet: true });
    try {
      const otherUrl = `http://127.0.0.1:${OTHER_PORT}`;
      const [runsBefore, mismatchesBefore] = [await runs(), await mismatches()];
      const { status, out } = await cli({ GATEWAY_URL: otherUrl, STRIPE_API_BASE: otherUrl });
      assert.equal(status, 2, out);
      assert.match(out, /refused: This database's gateway is account acct_\w+; the configured one is acct_\w+/);
      assert.match(out, /Nothing was reconciled or stored/);
      assert.deepEqual([await runs(), await mismatches()], [runsBefore, mismatchesBefore], "nothing stored");
    } finally {
      await other.stop();
    }
  });
});

/**
 * FINDING: the reconciliation reports a false "gateway charge without app
 * charge" when a charge completes while a run is going through its page.
 *
 * reconcileLedger reads the app charges of a whole page of gateway charges in
 * one query, then settles the page's orphans one by one, reading each orphan's
 * record afresh. A request that completes between the two reads (its charge row
 * and its completed record commit together) is seen without a charge (old read)
 * and with a complete record (new read): "the record completed without this
 * charge", a mismatch stored for people to investigate (and refund?), on a
 * ledger that is in order. The same happens with two sweepers reconciling at
 * once (one repairs a record while the other is between its two reads).
 *
 * Here the gap between the two reads is widened deterministically: the page's
 * first orphan is a repairable record whose row an outside transaction holds,
 * so the run waits on it while the second charge completes.
 */
describe("reconciliation racing a completion", () => {
  let apiKey: string;
  let clientId: number;
  before(async () => ({ apiKey, id: clientId } = await newApiClient("review reconcile race")));

  describe("a charge that completes while the reconciliation runs", () => {
    test("is not reported as a gateway charge without an app charge", { timeout: 60_000 }, async () => {
      const since = new Date(Date.now() - 1_000);
      // An orphan the run will repair: its holder died after the gateway charged.
      const orphanBody = chargeBody();
      const orphan = await seedRecord({
        apiClientId: clientId,
        phase: "lease_expired",
        body: orphanBody,
        ageMs: 5_000,
      });
      await chargeAtGateway(orphan, orphanBody);

      // A live request, charged at the gateway at once and answered 4 s later.
      const body = chargeBody({ card_token: "tok_slow_4000" });
      const key = uniqueKey("race");
      const live = postCharge({ apiKey, key, body });
      await waitFor(
        "the live charge at the gateway",
        async () => (await gatewayCharges(body.customer_id)).length === 1,
      );

      const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
      let released = false;
      try {
        await outside.query("BEGIN");
        await outside.query("SELECT id FROM idempotent_requests WHERE id = ? FOR UPDATE", [orphan.id]);
        const run = reconcileLedger({ since, until: new Date(Date.now() + 5_000) });
        await waitFor("the run to wait on the orphan's row", async () => {
          await new Promise((r) => setTimeout(r, 150)); // innodb_trx is refreshed at most every 100 ms
          const rows: unknown[] = await outside.query(
            "SELECT trx_id FROM information_schema.innodb_trx " +
              "WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE 'UPDATE idempotent_requests%'",
          );
          return rows.length > 0;
        });
        const answer = await live; // the live charge completes meanwhile
        assert.equal(answer.status, 201, answer.text);
        await outside.query("ROLLBACK");
        released = true;
        const result = await run;

        const [gatewayCharge] = await gatewayCharges(body.customer_id);
        assert.equal((await localCharges(body.customer_id)).length, 1, "the app has the live charge");
        const about = result.findings.filter((f) => f.gatewayChargeId === gatewayCharge!.id);
        try {
          assert.deepEqual(
            about.map((f) => [f.kind, f.evidence.why]),
            [],
            "no mismatch about a charge the app has",
          );
        } finally {
          await db.ledgerMismatch.updateMany({
            where: { gatewayChargeId: gatewayCharge!.id },
            data: { resolvedAt: new Date() },
          });
        }
      } finally {
        if (!released) await outside.query("ROLLBACK").catch(() => {});
        await outside.end();
      }
    });
  });
});

/**
 * FINDING (GATEWAY=stripe): a reconciliation whose window ends less than the
 * search lag after a charge reports a false "app charge without gateway charge".
 *
 * The Stripe adapter floors the window's end to the second (`created.lt`), so a
 * PaymentIntent made in the last, partial second is not listed; the app's charge
 * (created in the window, to the millisecond) is then looked up with
 * `findCharge(..., lastAttemptAt: new Date(0))`, i.e. "the lag is long over",
 * and Stripe's search, which lags behind writes, finds nothing: not_charged,
 * a mismatch. The periodic run ends its window at "now", so with traffic this
 * fires on most runs (resolved by the next run, after alarming people).
 */
describe("the reconciliation window's edge", () => {
  let apiKey: string;
  before(async () => ({ apiKey } = await newApiClient("review stripe window")));

  describe("a reconciliation window that ends just after a charge", {
    skip: env.GATEWAY !== "stripe" && "GATEWAY=stripe only",
  }, () => {
    test("reports no mismatch for a charge that is in order", async () => {
      // Start at the top of a second, so the charge and the run's end fall in the same second.
      await new Promise((r) => setTimeout(r, 1_000 - (Date.now() % 1_000) + 20));
      const since = new Date(Date.now() - 1_000);
      const charged = await postCharge({ apiKey, key: uniqueKey("window"), body: chargeBody() });
      assert.equal(charged.status, 201, charged.text);
      const result = await reconcileLedger({ since });
      const about = result.findings.filter((f) => f.chargeId === charged.json.id);
      try {
        assert.deepEqual(
          about.map((f) => [f.kind, f.evidence.why]),
          [],
          "the charge and its PaymentIntent are in order",
        );
      } finally {
        await new Promise((r) => setTimeout(r, 1_500));
        await reconcileLedger({ since }); // the next run lists it and resolves the false finding
        await db.ledgerMismatch.updateMany({ where: { chargeId: charged.json.id }, data: { resolvedAt: new Date() } });
      }
    });
  });
});

/**
 * FINDING (GATEWAY=stripe): one PaymentIntent that is not final, even one the
 * app never made, makes every reconciliation of its window fail.
 *
 * The Stripe adapter's listCharges maps every intent of the window with
 * toListed, which throws for an intent that is `processing` or
 * `requires_capture` ("list this window again once it settles"). A Stripe
 * account usually holds more than this app's intents (the dashboard, another
 * integration, a manual-capture flow: `requires_capture` for up to 7 days, a
 * bank debit: `processing` for days). While one such intent is in the window,
 * every run ends in error and nothing in that window is reconciled: real
 * mismatches go unreported. Intents without the app's metadata should be
 * reported (or ignored), and the app's own pending ones reported as pending,
 * without failing the rest.
 *
 * The intent is planted in the simulator's table, as another integration
 * would have made it.
 */
describe("another integration's PaymentIntents", () => {
  let gatewayDb: mariadb.Pool;
  before(() => {
    gatewayDb = mariadb.createPool({
      ...mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!),
      connectionLimit: 2,
    });
  });
  // The file's own after hook closes the shared connections, once every block has run.
  after(() => gatewayDb.end());

  describe("a PaymentIntent of another integration awaiting capture", {
    skip: env.GATEWAY !== "stripe" && "GATEWAY=stripe only",
  }, () => {
    test("does not make the reconciliation of its window fail", async () => {
      const id = `pi_${randomBytes(12).toString("hex")}`;
      const now = new Date();
      await gatewayDb.query(
        `INSERT INTO sim_payment_intents (id, idempotency_key, amount, currency, payment_method, status, latest_charge,
           last_payment_error, metadata, description, created, created_at, searchable_at)
         VALUES (?, NULL, 5000, 'usd', 'pm_card_visa', 'requires_capture', NULL, NULL, '{"order":"A-17"}',
                 'manual capture', ?, ?, ?)`,
        [id, Math.floor(now.getTime() / 1000) - 5, new Date(now.getTime() - 5_000), now],
      );
      try {
        const outcome = await reconcileLedger({ since: new Date(now.getTime() - 60_000) }).then(
          (r) => `finished, ${r.findings.length} findings`,
          (e: Error) => `failed: ${e.message}`,
        );
        assert.match(outcome, /^finished/);
      } finally {
        await gatewayDb.query("DELETE FROM sim_payment_intents WHERE id = ?", [id]);
      }
    });
  });
});

/**
 * FINDING (low, GATEWAY=stripe): the reconciliation fails outright on an app
 * charge whose record was pruned, when it has to look that charge's
 * PaymentIntent up (the intent is older than the window: a slow answer that
 * straddles the window's start, e.g. `npm run reconcile -- --since 25h`).
 *
 * appChargesWithoutGatewayCharge asks findCharge with requestId
 * String(charge.idempotentRequestId ?? 0) = "0" for a pruned record; the Stripe
 * adapter finds the intent and throws "has gateway key ... but belongs to
 * request N" because "0" is not N. The whole run ends in error; nothing after
 * that charge is reconciled.
 */
describe("reconciling charges whose record was pruned", () => {
  let apiKey: string;
  before(async () => ({ apiKey } = await newApiClient("review pruned record")));

  describe("an app charge whose record was pruned", { skip: env.GATEWAY !== "stripe" && "GATEWAY=stripe only" }, () => {
    test("does not make the reconciliation fail", { timeout: 30_000 }, async () => {
      const key = uniqueKey("pruned");
      const body = chargeBody({ card_token: "tok_slow_3000" }); // the intent is made at once, answered 3 s later
      const t0 = Date.now();
      const res = await postCharge({ apiKey, key, body });
      assert.equal(res.status, 201, res.text);
      await gatewayCharges(body.customer_id);
      // Its record lived its 24 h and was pruned (the charge row stays, pointing at no record).
      await db.$executeRawUnsafe(
        "UPDATE idempotent_requests SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND " +
          "WHERE id = (SELECT idempotent_request_id FROM charges WHERE id = ?)",
        res.json.id,
      );
      await pruneExpired();
      const charge = await db.charge.findUniqueOrThrow({ where: { id: res.json.id } });
      assert.equal(charge.idempotentRequestId, null, "the record was pruned");
      // A window that starts after the intent's second and before the app's charge.
      const since = new Date(Math.ceil((t0 + 1) / 1000) * 1000 + 500);
      assert.ok(since.getTime() < charge.createdAt.getTime(), "the window straddles the charge");
      const outcome = await reconcileLedger({ since }).then(
        (r) => `finished, ${r.findings.length} findings`,
        (e: Error) => `failed: ${e.message}`,
      );
      assert.match(outcome, /^finished/);
    });
  });
});

/**
 * A gateway refund landing after its operation was written off, recorded by the reconciliation (e8399d5), probed
 * by an independent review (2026-12-05): two reconciliations at once record it once; it is recorded beside an
 * app refund in flight only if both fit; the app's own refunds still hold to the limit afterwards.
 */
describe("recording a late refund, concurrently", () => {
  let apiKey: string;
  let clientId: number;
  before(async () => ({ apiKey, id: clientId } = await newApiClient("late refund review")));

  const since = () => new Date(Date.now() - 60_000);
  const reconcile = () => reconcileLedger({ since: since(), until: new Date(Date.now() + 2_000) });
  const show = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? String(x) : x));

  const lateRefund = (chargeCents: number, amountCents: number) =>
    lateRefundOf({ apiKey, apiClientId: clientId, chargeCents, amountCents });

  describe("recording a late refund, reviewed", () => {
    test("two reconciliations at once record it once, and neither fails", async () => {
      const { charge, late } = await lateRefund(1_000, 400);
      const runs = await Promise.allSettled([reconcile(), reconcile(), reconcile()]);
      const failed = runs
        .filter((r) => r.status === "rejected")
        .map((r) => String((r as PromiseRejectedResult).reason));
      assert.deepEqual(failed, [], "no reconciliation threw");
      const money = await refundedOf(charge.id);
      assert.deepEqual(
        [money.refunded, money.held, money.appSum, money.appCount, money.gatewayCount],
        [400, 0, 400, 1, 1],
        show(money),
      );
      assert.equal(
        await db.auditEvent.count({ where: { action: "ledger.late_refund_recorded", targetId: charge.id } }),
        1,
        "audited once",
      );
      const findings = runs.flatMap((r) =>
        r.status === "fulfilled" ? r.value.findings.filter((f) => f.subject === late.id) : [],
      );
      // Informational: a run that lost the race may report it as not fitting (the others' UPDATE counted first).
      if (findings.length) console.log("findings of the losing runs:", show(findings));
      assert.deepEqual((await reconcile()).findings, [], "in order afterwards");
    });

    test("after it is recorded, the app refunds only what is left; a refund of the rest is 201", async () => {
      const { charge } = await lateRefund(1_000, 700);
      await reconcile();
      assert.equal((await refundedOf(charge.id)).refunded, 700);
      const tooMuch = await postRefund({ apiKey, key: uniqueKey(), body: { charge: charge.id, amount_cents: 301 } });
      assert.equal(tooMuch.status, 400, tooMuch.text);
      const rest = await postRefund({ apiKey, key: uniqueKey(), body: { charge: charge.id } });
      assert.equal(rest.status, 201, rest.text);
      assert.equal(rest.json.amount_cents, 300);
      const money = await refundedOf(charge.id);
      assert.deepEqual(
        [money.refunded, money.appSum, money.gatewaySum, money.appCount, money.gatewayCount],
        [1_000, 1_000, 1_000, 2, 2],
      );
      assert.equal((await gatewayRefunds(charge.id)).length, 2);
      assert.deepEqual((await reconcile()).findings, []);
    });

    test("a written-off operation of another client naming this charge is not recorded against it", async () => {
      // The record's client differs from the charge's: the join must not match (the gateway refund stays a finding).
      const { charge, record, late } = await lateRefund(1_000, 200);
      const other = await newApiClient("late refund other");
      await db.idempotentRequest.update({ where: { id: record.id }, data: { apiClientId: other.id } });
      try {
        const result = await reconcile();
        assert.ok(
          result.findings.some((f) => f.subject === late.id),
          show(result.findings),
        );
        assert.equal((await refundedOf(charge.id)).refunded, 0);
      } finally {
        await db.idempotentRequest.update({ where: { id: record.id }, data: { apiClientId: clientId } });
      }
      await reconcile();
      assert.equal((await refundedOf(charge.id)).refunded, 200);
    });
  });
});

/**
 * A refund request held up on its way to the gateway past its operation's write-off, end to end (review of
 * e8399d5, 2026-12-05): the app gives up (unknown outcome), the sweeper proves no refund and gives the hold
 * back, then the request lands. Through the simulator's protocol its deadline refuses it (nothing refunded);
 * through Stripe's it refunds, and the reconciliation records it as the operation's refund. Either way the
 * invariants hold: 1:1, refunded <= charged, nothing held.
 */
describe("a late refund from request to record", () => {
  const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 17;
  const GATEWAY_PORT = Number(process.env.TEST_GATEWAY_PORT);
  const show = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? String(x) : x));

  let apiKey: string;
  before(async () => ({ apiKey } = await newApiClient("review late refund e2e")));

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
});
