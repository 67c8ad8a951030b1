/**
 * Keyed and keyless refunds whose claim or work meets their charge's row lock: the claim is made alone (lock wait
 * timeout 0 for the hold made with it), refusals found under the lock store nothing, and an attempt that waited
 * past its lease holds nothing once its record is not its own (the hold's fence).
 */
import { after, before, describe, test } from "node:test";
import {
  type ApiResponse,
  APP_URL,
  closeConnections,
  db,
  metricSample,
  newApiClient,
  newCharge,
  postRefund,
  recordsWithKey,
  refundedOf,
  scrapeMetrics,
  seedRecord,
  startAppInstance,
  uniqueKey,
} from "./helpers";
import assert from "node:assert/strict";
import * as mariadb from "mariadb";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { env } from "~/env";
import { gateway } from "~/server/gateway";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";

after(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LEASE_MS = env.GATEWAY_TIMEOUT_MS + env.LEASE_MARGIN_MS;
/** How long the app's statements wait for a row lock (the test stack sets DATABASE_LOCK_WAIT_TIMEOUT_S). */
const LOCK_WAIT_MS = (env.DATABASE_LOCK_WAIT_TIMEOUT_S ?? 50) * 1_000;
const OTHER_PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 7;

/**
 * A keyed refund's hold made in its claim's transaction (205deac), probed by an independent review: a claim whose
 * charge is locked elsewhere must not leave its record invisible while it waits (it is made alone, the work holds),
 * races on one charge stay within it, and a wait past the whole lease still refunds once.
 */
describe("a keyed refund's claim on a locked charge", () => {
  let apiKey: string;
  before(async () => ({ apiKey } = await newApiClient("claimhold")));

  const METRICS = `Bearer ${process.env.METRICS_TOKEN}`;
  const CONFLICTS = "charges_idempotency_claim_conflicts_total";

  /** What was refunded of a charge, and what its hold rows still hold. */
  async function totals(chargeId: string) {
    const holds = await db.refundHold.findMany({ where: { chargeId } });
    return { ...(await refundedOf(chargeId)), holdRows: holds.reduce((s, h) => s + h.amountCents, 0) };
  }

  describe("a keyed refund whose claim waits on its charge's row lock", () => {
    test("its operation is visible, and a same-key retry is answered 409 at once, as before the change", async () => {
      const charge = await newCharge(apiKey, { amount_cents: 1000 });
      const key = uniqueKey("locked");
      const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
      let first: Promise<unknown> | undefined;
      const conflictsBefore = metricSample((await scrapeMetrics(METRICS)).text, CONFLICTS);
      let conflictsAfter = conflictsBefore;
      try {
        await outside.query("BEGIN");
        await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
        first = postRefund({ apiKey, key, body: { charge, amount_cents: 100 } });
        await sleep(1_000);
        const visible = await recordsWithKey(key);
        conflictsAfter = metricSample((await scrapeMetrics(METRICS)).text, CONFLICTS);
        const lookup = await fetch(`${APP_URL}/api/refunds?idempotency_key=${encodeURIComponent(key)}`, {
          headers: { Authorization: `Bearer ${apiKey}` },
        });
        const started = Date.now();
        const retry = await postRefund({
          apiKey,
          key,
          body: { charge, amount_cents: 100 },
          signal: AbortSignal.timeout(3_000),
        }).catch((e: unknown) => ({ status: `no answer in ${Date.now() - started} ms (${String(e)})` }));
        assert.deepEqual(
          { visible, lookup: lookup.status, retry: retry.status },
          { visible: 1, lookup: 409, retry: 409 },
          "while the hold waits for the charge, the record is visible and a retry is answered 409",
        );
        assert.ok(conflictsAfter > conflictsBefore, "the claim-and-hold that met the lock counts as a claim conflict");
      } finally {
        await outside.query("ROLLBACK").catch(() => {});
        await outside.end();
        await first;
      }
    });
  });

  describe("a keyed refund that cannot be made, whose claim met its charge locked", () => {
    test("another client's charge: made alone, it is answered 404 once the lock lets go, never a 5xx", async () => {
      const charge = await newCharge(apiKey, { amount_cents: 1000 });
      const stranger = await newApiClient("claimhold stranger");
      const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
      let answer: ReturnType<typeof postRefund> | undefined;
      try {
        await outside.query("BEGIN");
        await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
        answer = postRefund({
          apiKey: stranger.apiKey,
          key: uniqueKey("stranger"),
          body: { charge, amount_cents: 100 },
        });
        await sleep(1_000);
      } finally {
        await outside.query("ROLLBACK").catch(() => {});
        await outside.end();
      }
      const res = await answer!;
      assert.deepEqual([res.status, res.json?.error?.code], [404, "not_found"], res.text);
      const t = await totals(charge);
      assert.deepEqual([t.refunded, t.held, t.holdRows, t.gatewayCount], [0, 0, 0, 0], JSON.stringify(t));
    });
  });

  describe("races on one charge", () => {
    test("60 refunds, 30 keys each sent twice at once, amounts 1..30: within the charge, 1:1, no 5xx", async () => {
      for (let round = 0; round < 3; round++) {
        const charge = await newCharge(apiKey, { amount_cents: 200 });
        const keys = Array.from({ length: 30 }, (_, i) => ({ key: uniqueKey("race"), amount: i + 1 }));
        const answers = await Promise.all(
          keys.flatMap(({ key, amount }) =>
            [0, 1].map(() =>
              postRefund({
                apiKey,
                key,
                body: { charge, amount_cents: amount },
                headers: amount % 2 ? { Prefer: "wait=5" } : {},
              }),
            ),
          ),
        );
        const bad = answers.filter((a) => a.status >= 500);
        assert.deepEqual(
          bad.map((a) => a.text),
          [],
        );
        const t = await totals(charge);
        assert.ok(t.refunded + t.held <= t.charged, JSON.stringify(t));
        assert.equal(t.held, 0, JSON.stringify(t));
        assert.equal(t.holdRows, 0, JSON.stringify(t));
        assert.equal(t.appSum, t.refunded, JSON.stringify(t));
        assert.equal(t.gatewaySum, t.appSum, JSON.stringify(t));
        assert.equal(t.gatewayCount, t.appCount, JSON.stringify(t));
      }
    });
  });

  describe("a claim that waits on its charge past its whole lease", () => {
    test("same-key retries queued behind it, then one more: one gateway refund, 1:1, nothing held", async () => {
      const charge = await newCharge(apiKey, { amount_cents: 500 });
      const key = uniqueKey("longwait");
      const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
      const body = { charge, amount_cents: 200 };
      let sent: Promise<{ status: number; text: string }>[] = [];
      try {
        await outside.query("BEGIN");
        await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
        sent.push(postRefund({ apiKey, key, body }));
        await sleep(300);
        sent = sent.concat([0, 1, 2].map(() => postRefund({ apiKey, key, body, headers: { Prefer: "wait=10" } })));
        await sleep(LEASE_MS + 1_500); // the lease (GATEWAY_TIMEOUT_MS + LEASE_MARGIN_MS) started at the INSERT
      } finally {
        await outside.query("ROLLBACK").catch(() => {});
        await outside.end();
      }
      const answers = await Promise.all(sent);
      // Whoever did not get the refund's answer retries, as the SDK does after a 503 or a 409: it ends once.
      if (!answers.some((a) => a.status === 201)) {
        const retry = await postRefund({ apiKey, key, body, headers: { Prefer: "wait=10" } });
        answers.push(retry);
        assert.equal(retry.status, 201, retry.text);
      }
      const t = await totals(charge);
      assert.deepEqual(
        { refunded: t.refunded, held: t.held, holdRows: t.holdRows, app: t.appCount, gateway: t.gatewayCount },
        { refunded: 200, held: 0, holdRows: 0, app: 1, gateway: 1 },
        answers.map((a) => `${a.status} ${a.text.slice(0, 120)}`).join("\n"),
      );
      assert.ok(
        answers.every((a) => [201, 409, 503].includes(a.status)),
        answers.map((a) => a.status).join(","),
      );
    });
  });
});

/**
 * Review of f3be6a1 (a keyed refund refused by its hold, in its claim's transaction): when the claim meets its
 * charge locked elsewhere (another refund's hold or completion, a ledger job), the claim is made alone and the
 * work holds later. A refusal found there is stored as the operation's answer, so the key is burnt: invariant 3
 * says a refusal stores nothing and a retry with a corrected body succeeds. The keyed precheck that used to refuse
 * these before any claim is skipped now (submitOperation.checkBeforeClaim, claimDecides). Fixed: the work's
 * refusal declines, and the record, under which no gateway call was made, is withdrawn (WorkResult `declined`).
 */
describe("refusals found under the charge's lock", () => {
  let apiKey: string;
  let clientId: number;
  before(async () => ({ apiKey, id: clientId } = await newApiClient("refusal under lock")));

  /** Sends `send()` while another connection holds the charge's row lock, and lets go after a second. */
  async function whileChargeLocked(charge: string, send: () => Promise<ApiResponse>): Promise<ApiResponse> {
    const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
    let answer: Promise<ApiResponse> | undefined;
    try {
      await outside.query("BEGIN");
      await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
      answer = send();
      await sleep(1_000);
    } finally {
      await outside.query("ROLLBACK").catch(() => {});
      await outside.end();
    }
    return answer!;
  }

  describe("a keyed refund refused after its claim met the charge locked", () => {
    test("amount over what is left: 400, nothing stored, and the corrected retry under the key is a 201", async () => {
      const charge = await newCharge(apiKey, { amount_cents: 1000 });
      const key = uniqueKey("over-locked");
      const first = await whileChargeLocked(charge, () =>
        postRefund({ apiKey, key, body: { charge, amount_cents: 5000 } }),
      );
      const stored = await recordsWithKey(key);
      const retry = await postRefund({ apiKey, key, body: { charge, amount_cents: 100 } });
      const t = await refundedOf(charge);
      assert.deepEqual(
        {
          first: [first.status, first.json?.error?.code],
          stored,
          retry: [retry.status, retry.json?.error?.code ?? null],
          refunded: t.refunded,
          held: t.held,
        },
        { first: [400, "invalid_request"], stored: 0, retry: [201, null], refunded: 100, held: 0 },
        `first: ${first.text}\nretry: ${retry.text}`,
      );
    });

    test("another client's charge: 404 stores nothing, and the retry naming its own charge is a 201", async () => {
      const others = await newApiClient("refusal under lock, owner");
      const foreign = await newCharge(others.apiKey, { amount_cents: 1000 });
      const own = await newCharge(apiKey, { amount_cents: 1000 });
      const key = uniqueKey("foreign-locked");
      const first = await whileChargeLocked(foreign, () =>
        postRefund({ apiKey, key, body: { charge: foreign, amount_cents: 100 } }),
      );
      const stored = await recordsWithKey(key);
      const retry = await postRefund({ apiKey, key, body: { charge: own, amount_cents: 100 } });
      assert.deepEqual(
        { first: first.status, stored, retry: [retry.status, retry.json?.error?.code ?? null] },
        { first: 404, stored: 0, retry: [201, null] },
        `first: ${first.text}\nretry: ${retry.text}`,
      );
    });
  });

  describe("keyless refunds that pass the precheck and then lose the race for what was left", () => {
    test("two of 600 on 1000 behind the charge's lock: one 201, one refused, no record, both counted", async () => {
      const charge = await newCharge(apiKey, { amount_cents: 1000 });
      const keyless = () => db.idempotentRequest.count({ where: { apiClientId: clientId, idempotencyKey: null } });
      const counted = async () =>
        (await db.requestCountBucket.aggregate({ where: { apiClientId: clientId }, _sum: { keyless: true } }))._sum
          .keyless ?? 0;
      const [recordsBefore, countBefore] = [await keyless(), await counted()];
      const body = { charge, amount_cents: 600 };
      let second: Promise<ApiResponse> | undefined;
      const first = await whileChargeLocked(charge, async () => {
        second = postRefund({ apiKey, body });
        return postRefund({ apiKey, body });
      });
      const answers = [first, await second!].map((a) => `${a.status} ${a.json?.error?.code ?? "refund"}`).sort();
      // Refused while the other still holds its 600 (in flight: told to retry), or once it is refunded (400).
      assert.equal(answers[0], "201 refund", answers.join(", "));
      assert.ok(["400 invalid_request", "409 refund_in_progress"].includes(answers[1]!), answers.join(", "));
      assert.equal((await keyless()) - recordsBefore, 1, "only the refund's record is left");
      assert.equal((await counted()) - countBefore, 2, "both counted as accepted keyless requests");
      const t = await refundedOf(charge);
      assert.deepEqual([t.refunded, t.held], [600, 0]);
    });
  });

  describe("refunds racing on one charge with different keys, no lock taken by the test", () => {
    test("5 rounds of 40 keyed refunds of 100 on a charge of 1000: every refusal leaves no record", async () => {
      const stored: string[] = [];
      for (let round = 0; round < 5; round++) {
        const charge = await newCharge(apiKey, { amount_cents: 1000 });
        const keys = Array.from({ length: 40 }, (_, i) => uniqueKey(`race-${round}-${i}`));
        const body = { charge, amount_cents: 100 };
        const answers = await Promise.all(keys.map((key) => postRefund({ apiKey, key, body })));
        for (const [i, key] of keys.entries()) {
          const a = answers[i]!;
          if (a.status !== 201 && (await recordsWithKey(key)) > 0) stored.push(`${a.status} ${a.json?.error?.code}`);
        }
        assert.equal((await refundedOf(charge)).refunded, 1000);
      }
      assert.deepEqual(stored, [], "refusals stored as their operation's answer (their keys are burnt)");
    });
  });
});

/**
 * Review of 9178858 (a refusal found by the work's hold withdraws its record). Its safety argument: a work that
 * finds no own hold and cannot hold shows that no attempt called the gateway, since every attempt holds before it
 * calls and holds end only with the record's completion. But the work's hold (holds.ts, HOLD_SQL) is not fenced
 * on the record: an attempt that waited on its charge's row lock past its lease holds AFTER its record was
 * finished (or withdrawn) by someone else, and that hold is never ended. Fixed: the hold reads the record under a
 * share lock first (idempotency's attemptFence) and holds nothing once it is not this attempt's.
 */
describe("an attempt that waited on the lock past its lease", () => {
  let apiKey: string;
  before(async () => ({ apiKey } = await newApiClient("review2 stale hold")));

  const bigints = (_k: string, v: unknown) => (typeof v === "bigint" ? String(v) : v);

  describe("a keyed refund whose work waited on its charge's lock past its lease", () => {
    test("written off by the sweeper meanwhile: it holds nothing, and nothing is left held", async () => {
      const { reapAbandoned } = await import("~/server/sweep/reapAbandoned");
      const charge = await newCharge(apiKey, { amount_cents: 1000 });
      const key = uniqueKey("stale-hold");
      const body = { charge, amount_cents: 200 };
      const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
      let first: Awaited<ReturnType<typeof postRefund>>;
      try {
        await outside.query("BEGIN");
        await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
        const sent = postRefund({ apiKey, key, body });
        // The claim (made alone) waits in its work's hold; its lease ends, and nothing it sent can still land.
        await sleep(LEASE_MS + gateway.lateLandingMs + 1_000);
        await reapAbandoned({ olderThanMs: 0 }); // what the sweeper does once the record is due
        await outside.query("ROLLBACK");
        first = await sent;
      } finally {
        await outside.query("ROLLBACK").catch(() => {});
        await outside.end();
      }
      const retry = await postRefund({ apiKey, key, body });
      await reapAbandoned({ olderThanMs: 0 });
      const t = await refundedOf(charge);
      const holds = await db.refundHold.findMany({ where: { chargeId: charge } });
      const records = await db.idempotentRequest.findMany({
        where: { id: { in: holds.map((h) => h.idempotentRequestId) } },
        select: { id: true, state: true, finishedBy: true },
      });
      assert.deepEqual(
        { refunded: t.refunded, held: t.held, holdRows: holds.length, gateway: t.gatewayCount },
        { refunded: 0, held: 0, holdRows: 0, gateway: 0 },
        `first: ${first.status} ${first.text}\nretry: ${retry.status} ${retry.text}\n` +
          `hold rows' records: ${JSON.stringify(records, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`,
      );
    });
  });

  describe("a keyed refund withdrawn by a take-over while its first attempt still waits on the charge's lock", () => {
    test("the first attempt holds nothing for a record withdrawn meanwhile, and nothing is left held", async () => {
      // The first attempt waits in its work's hold (innodb_lock_wait_timeout, LOCK_WAIT_MS) and is retried behind the
      // take-over (retryOnLockConflict); between them the sweeper gives back another refund's hold. The take-over
      // finds nothing left and withdraws; the first attempt then finds room and holds for the withdrawn record.
      const { reapAbandoned } = await import("~/server/sweep/reapAbandoned");
      const other = await startAppInstance(OTHER_PORT);
      try {
        const charge = await newCharge(apiKey, { amount_cents: 1000, card_token: "tok_refund_error" });
        const lost = await postRefund({ apiKey, key: uniqueKey("lost"), body: { charge, amount_cents: 1000 } });
        assert.equal(lost.status, 503, lost.text); // outcome unknown: released, its hold of 1000 kept
        const key = uniqueKey("withdrawn-stale");
        const body = { charge, amount_cents: 200 };
        const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
        const answers: string[] = [];
        try {
          await outside.query("BEGIN");
          await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
          const first = postRefund({ apiKey, key, body });
          await sleep(LEASE_MS + 1_000);
          const takeOver = postRefund({ apiKey, key, body, baseUrl: `http://127.0.0.1:${OTHER_PORT}` });
          await sleep(2_000);
          const sweep = reapAbandoned({ olderThanMs: 0 }); // settles the lost refund: waits on the lock too
          // The first attempt's hold times out (LOCK_WAIT_MS after it began) and goes again, behind them.
          await sleep(LOCK_WAIT_MS - 5_000);
          await outside.query("ROLLBACK");
          for (const a of [await first, await takeOver]) answers.push(`${a.status} ${a.text.slice(0, 100)}`);
          await sweep;
        } finally {
          await outside.query("ROLLBACK").catch(() => {});
          await outside.end();
        }
        await reapAbandoned({ olderThanMs: 0 });
        const t = await refundedOf(charge);
        const holds = await db.refundHold.findMany({ where: { chargeId: charge } });
        const records = await db.idempotentRequest.findMany({
          where: { id: { in: holds.map((h) => h.idempotentRequestId) } },
          select: { id: true, state: true, attempt: true },
        });
        assert.deepEqual(
          { held: t.held, holdRows: holds.length, gateway: t.gatewayCount },
          { held: 0, holdRows: 0, gateway: 0 },
          `answers:\n${answers.join("\n")}\nholds: ${JSON.stringify(holds, bigints)}\n` +
            `their records: ${JSON.stringify(records, bigints)}`,
        );
      } finally {
        await other.stop();
      }
    });
  });
});

/**
 * Review of 9178858, GATEWAY=stripe: a record withdrawn by a take-over whose hold found nothing left, while its
 * first attempt still waited on the charge's lock (the block above). That attempt holds afterwards and calls
 * Stripe, which has no deadline to refuse a late request by; the key, usable again, makes a second record, a new
 * gateway key and a second refund of the one operation. Fixed with the same fence: the stale attempt
 * holds nothing, so it never calls.
 */
describe("a withdrawn record's stale attempt, through Stripe", () => {
  let apiKey: string;
  let clientId: number;
  before(async () => ({ apiKey, id: clientId } = await newApiClient("review2 stripe withdrawn")));

  describe("a withdrawn refund record whose first attempt still waited on the charge's lock", () => {
    const only = { skip: env.GATEWAY !== "stripe" && "GATEWAY=stripe only (the simulator refuses a late refund)" };
    test("one operation (one key, one body): at most one gateway refund", only, async () => {
      const { reapAbandoned } = await import("~/server/sweep/reapAbandoned");
      const other = await startAppInstance(OTHER_PORT);
      try {
        const charge = await newCharge(apiKey, { amount_cents: 1000 });
        // Another refund of it whose instance died after holding, before any gateway call: released, holding 1000.
        const dead = await seedRecord({
          apiClientId: clientId,
          phase: "released",
          route: REFUNDS_ROUTE,
          body: { charge, amount_cents: 1000 },
        });
        await db.refundHold.create({ data: { idempotentRequestId: dead.id, chargeId: charge, amountCents: 1000 } });
        await db.charge.update({ where: { id: charge }, data: { refundHeldCents: 1000 } });
        const key = uniqueKey("withdrawn-stripe");
        const body = { charge, amount_cents: 200 };
        const outside = await mariadb.createConnection(mysqlConnectionOptions(process.env.DATABASE_URL!));
        const answers: string[] = [];
        try {
          await outside.query("BEGIN");
          await outside.query("SELECT id FROM charges WHERE id = ? FOR UPDATE", [charge]);
          const first = postRefund({ apiKey, key, body }); // claimed alone; its work's hold waits on the lock
          await sleep(LEASE_MS + 1_000);
          // A retry on another instance takes the record over; its hold waits behind the first's.
          const takeOver = postRefund({ apiKey, key, body, baseUrl: `http://127.0.0.1:${OTHER_PORT}` });
          await sleep(2_000);
          const sweep = reapAbandoned({ olderThanMs: 0 }); // writes the dead refund off: its give-back waits too
          // The first attempt's hold times out (LOCK_WAIT_MS after it began) and goes again, behind both.
          await sleep(LOCK_WAIT_MS - 5_000);
          await outside.query("ROLLBACK"); // take-over: nothing left, withdrawn; give-back; first attempt: holds
          for (const a of [await first, await takeOver]) answers.push(`${a.status} ${a.text.slice(0, 90)}`);
          await sweep;
        } finally {
          await outside.query("ROLLBACK").catch(() => {});
          await outside.end();
        }
        // The client retries its operation under its key, as told (503, 409).
        const retry = await postRefund({ apiKey, key, body, headers: { Prefer: "wait=10" } });
        answers.push(`${retry.status} ${retry.text.slice(0, 90)}`);
        await sleep(2_000);
        await reapAbandoned({ olderThanMs: 0 });
        const t = await refundedOf(charge);
        assert.deepEqual(
          { gatewayRefunds: t.gatewayCount, gatewaySum: t.gatewaySum, appSum: t.appSum, held: t.held },
          { gatewayRefunds: 1, gatewaySum: 200, appSum: 200, held: 0 },
          answers.join("\n"),
        );
      } finally {
        await other.stop();
      }
    });
  });
});
