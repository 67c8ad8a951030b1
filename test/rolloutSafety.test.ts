/**
 * "Safe to enforce" (src/server/rollout/stats.ts) through the tRPC procedure,
 * against the real database: it needs no accepted keyless request in the
 * window AND enough evidence (SAFE_TO_ENFORCE_MIN_KEYED keyed requests in the
 * window, counts going back SAFE_TO_ENFORCE_MIN_HOURS_OBSERVED hours). The
 * decision reads every client's counts, so each test starts from empty
 * counter tables and seeds the hours it needs (spread over several shard rows,
 * as src/server/rollout/counters.ts writes them); the counts the other tests
 * made are put back at the end.
 */
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { env } from "~/env";
import type { RequestCountBucket, RequestCountDay, RequestCountHour } from "~/generated/prisma/client";
import type { SessionUser } from "~/server/auth/session";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { execute } from "~/server/db";
import { hourBucket } from "~/server/rollout/counters";
import { createCaller } from "~/server/trpc/root";
import { createInnerTRPCContext } from "~/server/trpc/trpc";
import { chargeBody, closeConnections, db, newApiClient, postCharge, uniqueKey, waitFor } from "./helpers";

const HOUR = 3_600_000;
const WINDOW = env.SAFE_TO_ENFORCE_HOURS * HOUR;
const MIN_KEYED = env.SAFE_TO_ENFORCE_MIN_KEYED;
const MIN_HOURS = env.SAFE_TO_ENFORCE_MIN_HOURS_OBSERVED;

let engineer: SessionUser;
let saved: { shards: RequestCountBucket[]; hours: RequestCountHour[]; days: RequestCountDay[] };
const as = (user: SessionUser) => createCaller(createInnerTRPCContext({ user }));
const status = () => as(engineer).rollout.status();

type Counts = {
  shard?: number;
  route?: string;
  keyed?: number;
  attempts?: number;
  /** Accepted keyless requests (lastKeylessAt: the last of them). */
  keyless?: number;
  /** Refused keyless requests. */
  rejected?: number;
  lastKeylessAt?: Date | null;
};

/** Adds to one shard row of a client's hour, as the app does (raw SQL through the driver, UTC). */
async function seed(apiClientId: number, at: Date, c: Counts) {
  await execute({
    sql: `INSERT INTO request_count_buckets
            (api_client_id, bucket_start, route, shard, keyed, keyed_attempts, keyless, keyless_rejected,
             last_keyless_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
          ON DUPLICATE KEY UPDATE keyed = keyed + VALUES(keyed), keyless = keyless + VALUES(keyless),
            keyed_attempts = keyed_attempts + VALUES(keyed_attempts),
            keyless_rejected = keyless_rejected + VALUES(keyless_rejected),
            last_keyless_at = COALESCE(GREATEST(last_keyless_at, VALUES(last_keyless_at)), last_keyless_at,
                                       VALUES(last_keyless_at))`,
    values: [
      apiClientId,
      hourBucket(at),
      c.route ?? CHARGES_ROUTE,
      c.shard ?? 0,
      c.keyed ?? 0,
      c.attempts ?? c.keyed ?? 0,
      c.keyless ?? 0,
      c.rejected ?? 0,
      c.lastKeylessAt ?? null,
    ],
  });
}

/** Enough keyed traffic in this hour, spread over four shard rows. */
async function seedEnoughKeyed(apiClientId: number) {
  const quarter = Math.ceil(MIN_KEYED / 4);
  for (const shard of [1, 4, 9, 15]) await seed(apiClientId, new Date(), { shard, keyed: quarter });
}

/** Counts going back `hours` (one keyed request then). */
const seedHistory = (apiClientId: number, hours: number) =>
  seed(apiClientId, new Date(hourBucket(new Date()).getTime() - hours * HOUR), { keyed: 1 });

async function enable(mode: "optional" | "required") {
  if ((await status()).mode !== mode) await as(engineer).rollout.setMode({ mode, reason: "safe-to-enforce test" });
}

before(async () => {
  const u = await db.staffUser.create({
    data: { email: `safety-${uniqueKey()}@example.com`, name: "Safety", role: "engineer", passwordHash: "x" },
  });
  engineer = { id: u.id, email: u.email, name: u.name, role: u.role };
  saved = {
    shards: await db.requestCountBucket.findMany(),
    hours: await db.requestCountHour.findMany(),
    days: await db.requestCountDay.findMany(),
  };
});
/** No counts at all: open shard rows, and the hours and days the sweeper folded them into. */
async function forgetCounts() {
  await db.requestCountBucket.deleteMany();
  await db.requestCountHour.deleteMany();
  await db.requestCountDay.deleteMany();
}

beforeEach(async () => {
  await enable("optional");
  await forgetCounts();
});
after(async () => {
  await enable("optional");
  await forgetCounts();
  await db.requestCountBucket.createMany({ data: saved.shards });
  await db.requestCountHour.createMany({ data: saved.hours });
  await db.requestCountDay.createMany({ data: saved.days });
  await closeConnections();
});

describe("safe to enforce", () => {
  test("a fresh system after a handful of keyed requests is not safe: too few keyed requests, hours", async () => {
    assert.ok(MIN_KEYED > 19 && MIN_HOURS > 1, "the defaults (or a test configuration that asks for evidence)");
    const empty = await status();
    assert.equal(empty.safeToEnforce, false, "nothing counted proves nothing");
    assert.equal(empty.evidence.observedHours, 0);
    assert.equal(empty.safeAt, null);

    // The original bug: "Safe" after 19 requests on a fresh system.
    const client = await newApiClient("safety-fresh");
    for (let i = 0; i < 19; i++) {
      const res = await postCharge({ apiKey: client.apiKey, key: uniqueKey("fresh"), body: chargeBody() });
      assert.equal(res.status, 201);
    }
    // At least these 19: an earlier test file's last keyed counts may still be on their way from the app's memory.
    const s = await waitFor("the keyed requests to be counted", async () => {
      const s = await status();
      return s.evidence.keyedInWindow >= 19 && s;
    });
    assert.deepEqual(s.blocking, [], "no keyless request: nobody blocks");
    assert.equal(s.safeToEnforce, false);
    assert.equal(s.evidence.enoughKeyed, false);
    assert.equal(s.evidence.enoughHistory, false);
    assert.ok(s.evidence.observedHours < 1, `observed ${s.evidence.observedHours} h`);
    assert.equal(s.evidence.minKeyed, MIN_KEYED);
    assert.equal(s.evidence.minHoursObserved, MIN_HOURS);
    const firstHour = hourBucket(new Date()).getTime();
    assert.equal(s.safeAt?.getTime(), firstHour + MIN_HOURS * HOUR, "safe at the earliest when the history is long");

    // Enough keyed traffic is not enough on its own.
    await seedEnoughKeyed(client.id);
    const keyed = await status();
    assert.equal(keyed.evidence.enoughKeyed, true);
    assert.equal(keyed.evidence.enoughHistory, false);
    assert.equal(keyed.safeToEnforce, false);
  });

  test("a long history with too little keyed traffic in the window is not safe", async () => {
    const client = await newApiClient("safety-quiet");
    await seedHistory(client.id, MIN_HOURS + 8);
    await seed(client.id, new Date(), { shard: 3, keyed: MIN_KEYED - 1 });
    const s = await status();
    assert.equal(s.evidence.enoughHistory, true);
    assert.equal(s.evidence.keyedInWindow, MIN_KEYED - 1, "the history's hour is before the window");
    assert.equal(s.evidence.enoughKeyed, false);
    assert.equal(s.safeToEnforce, false);
  });

  test("safe when all holds: enough keyed traffic and history, no accepted keyless request in the window", async () => {
    const client = await newApiClient("safety-ok");
    const refusing = await newApiClient("safety-refused");
    const old = await newApiClient("safety-old");
    await seedHistory(client.id, MIN_HOURS + 1);
    await seedEnoughKeyed(client.id);
    // Keyless requests that were all refused do not block...
    const refusedAt = new Date(Date.now() - 2 * HOUR);
    await seed(refusing.id, refusedAt, { rejected: 2 });
    // ...nor do accepted ones from before the window.
    const longAgo = new Date(Date.now() - WINDOW - 2 * HOUR);
    await seed(old.id, longAgo, { keyless: 5, lastKeylessAt: longAgo });
    const s = await status();
    assert.deepEqual(s.blocking, []);
    assert.equal(s.evidence.enoughKeyed, true);
    assert.equal(s.evidence.enoughHistory, true);
    assert.equal(s.safeToEnforce, true);
    assert.equal(s.safeAt, null, "already safe");
    assert.equal(s.clients.find((c) => c.apiClientId === refusing.id)?.rejected, 2);
  });

  test("a keyless request in the window blocks it, naming the client; safeAt: when the last one ages out", async () => {
    const steady = await newApiClient("safety-steady");
    const late = await newApiClient("safety-late");
    const early = await newApiClient("safety-early");
    await seedHistory(steady.id, MIN_HOURS + 1);
    await seedEnoughKeyed(steady.id);
    // One client's hour on two shard rows; the later request is the one that counts.
    const lateAt = new Date(Date.now() - 3 * HOUR);
    await seed(late.id, lateAt, { shard: 2, keyless: 2, keyed: 1, lastKeylessAt: new Date(lateAt.getTime() - 60_000) });
    await seed(late.id, lateAt, { shard: 11, keyless: 1, lastKeylessAt: lateAt });
    const earlyAt = new Date(Date.now() - 10 * HOUR);
    await seed(early.id, earlyAt, { shard: 5, keyless: 1, lastKeylessAt: earlyAt });
    const s = await status();
    assert.equal(s.safeToEnforce, false);
    assert.equal(s.evidence.enoughKeyed, true);
    assert.equal(s.evidence.enoughHistory, true);
    assert.deepEqual(s.blocking, [
      {
        apiClientId: late.id,
        name: s.clients.find((c) => c.apiClientId === late.id)!.name,
        keyless: 3,
        cleanAt: new Date(lateAt.getTime() + WINDOW),
      },
      {
        apiClientId: early.id,
        name: s.clients.find((c) => c.apiClientId === early.id)!.name,
        keyless: 1,
        cleanAt: new Date(earlyAt.getTime() + WINDOW),
      },
    ]);
    assert.match(s.blocking[0]!.name, /^safety-late /);
    assert.equal(s.safeAt?.getTime(), lateAt.getTime() + WINDOW, "when the latest blocker's request leaves the window");
    const row = s.clients.find((c) => c.apiClientId === late.id)!;
    assert.equal(row.blocking, true);
    assert.equal(row.keylessShare, 3 / 4);
    assert.equal(row.lastAcceptedKeylessAt?.getTime(), lateAt.getTime());
  });

  test("safeAt waits for the history too, when that comes later than the blockers' window", async () => {
    const client = await newApiClient("safety-young");
    // History that turns long enough well after the keyless request below has left the window.
    const historyHours = MIN_HOURS - env.SAFE_TO_ENFORCE_HOURS - 6;
    assert.ok(historyHours > 0, "a configuration where the history is the later condition");
    await seedHistory(client.id, historyHours);
    await seedEnoughKeyed(client.id);
    const keylessAt = new Date(Date.now() - HOUR);
    await seed(client.id, keylessAt, { keyless: 1, lastKeylessAt: keylessAt });
    const s = await status();
    assert.equal(s.evidence.enoughHistory, false);
    assert.equal(s.blocking[0]?.cleanAt?.getTime(), keylessAt.getTime() + WINDOW);
    const historyAt = hourBucket(new Date()).getTime() + (MIN_HOURS - historyHours) * HOUR;
    assert.equal(s.safeAt?.getTime(), historyAt, "the later of the two: when the history is long enough");
  });

  test("after the global switch it says enforced, not safe, and counts the refusals per client", async () => {
    const a = await newApiClient("safety-refused-a");
    const b = await newApiClient("safety-refused-b");
    await seedHistory(a.id, MIN_HOURS + 1);
    await seedEnoughKeyed(a.id);
    assert.equal((await status()).safeToEnforce, true);
    await enable("required");
    for (const [client, n] of [
      [a, 2],
      [b, 1],
    ] as const) {
      for (let i = 0; i < n; i++) {
        const res = await postCharge({ apiKey: client.apiKey, body: chargeBody() });
        assert.equal(res.status, 400);
        assert.equal(res.json.error.code, "idempotency_key_required");
      }
    }
    const s = await status();
    assert.equal(s.mode, "required");
    assert.equal(s.safeToEnforce, false, "enforced is not 'safe to enforce'");
    assert.deepEqual(s.blocking, [], "refused requests block nothing");
    const rowA = s.clients.find((c) => c.apiClientId === a.id)!;
    const rowB = s.clients.find((c) => c.apiClientId === b.id)!;
    assert.deepEqual([rowA.enforced, rowA.rejected, rowA.keyless], ["global", 2, 0], "refused, none accepted");
    assert.deepEqual([rowB.enforced, rowB.rejected, rowB.keyless], ["global", 1, 0]);
    assert.equal(rowA.keylessLastHour, 0, "refused requests are not what a switch would reject");
    assert.equal(s.rejectedInWindow, 3);
  });

  test("refused keyless requests after an accepted one never move 'clean from'", async () => {
    const client = await newApiClient("safety-clean-from");
    await seedHistory(client.id, MIN_HOURS + 1);
    await seedEnoughKeyed(client.id);
    assert.equal((await postCharge({ apiKey: client.apiKey, body: chargeBody() })).status, 201);
    const accepted = await status();
    const acceptedAt = accepted.clients.find((c) => c.apiClientId === client.id)!.lastAcceptedKeylessAt!;
    assert.ok(acceptedAt, "the accepted one blocks");
    // Enforced for a while (in the same hour): its keyless requests are refused...
    await enable("required");
    await new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < 3; i++)
      assert.equal((await postCharge({ apiKey: client.apiKey, body: chargeBody() })).status, 400);
    // ...and back to optional, the client is as clean as before: from its last accepted request.
    await enable("optional");
    const s = await status();
    const row = s.clients.find((c) => c.apiClientId === client.id)!;
    assert.deepEqual([row.keyless, row.rejected], [1, 3], "accepted and refused apart");
    assert.equal(row.lastAcceptedKeylessAt?.getTime(), acceptedAt.getTime());
    assert.equal(row.lastKeylessAt?.getTime(), acceptedAt.getTime(), "a refused request is not its last keyless one");
    assert.equal(s.blocking[0]?.cleanAt?.getTime(), acceptedAt.getTime() + WINDOW);
  });

  test("a client whose header is required on its own no longer blocks the global switch", async () => {
    const client = await newApiClient("safety-enforced-one");
    await seedHistory(client.id, MIN_HOURS + 1);
    await seedEnoughKeyed(client.id);
    const at = new Date(Date.now() - HOUR);
    await seed(client.id, at, { keyless: 4, lastKeylessAt: at });
    const before = await status();
    assert.deepEqual(
      before.blocking.map((b) => b.apiClientId),
      [client.id],
    );
    assert.equal(before.safeToEnforce, false);
    await as(engineer).rollout.setClientRequired({ clientId: client.id, required: true, reason: "test" });
    const s = await status();
    assert.deepEqual(s.blocking, [], "it cannot send another accepted keyless request");
    assert.equal(s.safeToEnforce, true);
    const row = s.clients.find((c) => c.apiClientId === client.id)!;
    assert.deepEqual([row.enforced, row.blocking, row.cleanAt, row.keyless], ["client", false, null, 4]);
    await as(engineer).rollout.setClientRequired({ clientId: client.id, required: false, reason: "test" });
    assert.deepEqual(
      (await status()).blocking.map((b) => b.apiClientId),
      [client.id],
      "following the global mode again, it blocks again",
    );
  });

  test("keyed traffic is counted as operations, with its attempts (retries, replays) apart", async () => {
    const client = await newApiClient("safety-operations");
    const key = uniqueKey("operation");
    const body = chargeBody();
    assert.equal((await postCharge({ apiKey: client.apiKey, key, body })).status, 201);
    assert.equal((await postCharge({ apiKey: client.apiKey, key, body })).status, 201, "a replay");
    assert.equal((await postCharge({ apiKey: client.apiKey, key, body })).status, 201, "another replay");
    assert.equal((await postCharge({ apiKey: client.apiKey, key: uniqueKey("operation"), body })).status, 201);
    const s = await waitFor("the keyed counts to be written", async () => {
      const s = await status();
      return s.clients.find((c) => c.apiClientId === client.id)?.keyedAttempts === 4 && s;
    });
    const row = s.clients.find((c) => c.apiClientId === client.id)!;
    assert.deepEqual([row.keyed, row.keyedAttempts], [2, 4], "two operations, four HTTP attempts");
    assert.equal(s.evidence.keyedInWindow, 2, "the evidence is operations");
    assert.equal(s.keyedAttemptsInWindow, 4);
  });

  test("counts and the series are kept per route, for any money route", async () => {
    const client = await newApiClient("safety-routes");
    const REFUNDS = "POST /api/refunds";
    const at = new Date(Date.now() - 2 * HOUR);
    await seed(client.id, at, { keyed: 7, attempts: 9 });
    await seed(client.id, at, { route: REFUNDS, shard: 3, keyed: 2, keyless: 1, rejected: 1, lastKeylessAt: at });
    const s = await status();
    assert.deepEqual(
      s.routes.map((r) => [r.route, r.keyed, r.keyedAttempts, r.keyless, r.rejected]),
      [
        [CHARGES_ROUTE, 7, 9, 0, 0],
        [REFUNDS, 2, 2, 1, 1],
      ],
    );
    const row = s.clients.find((c) => c.apiClientId === client.id)!;
    assert.deepEqual([row.keyed, row.keyless, row.blocking], [9, 1, true], "a client's numbers are every route's");
    const refunds = await as(engineer).rollout.series({ granularity: "hour", clientIds: [client.id], route: REFUNDS });
    const point = refunds.clients[0]!.points.find((p) => p.bucket.getTime() === hourBucket(at).getTime())!;
    assert.deepEqual([point.keyed, point.keyless, point.rejected, point.keylessShare], [2, 1, 1, 1 / 3]);
    const all = await as(engineer).rollout.series({ granularity: "day", clientIds: [client.id] });
    assert.equal(
      all.clients[0]!.points.reduce((sum, p) => sum + p.keyed, 0),
      9,
    );
  });

  test("the series starts where the history does, and marks the mode's switches", async () => {
    const client = await newApiClient("safety-short-history");
    const at = new Date(Date.now() - 5 * HOUR);
    await seed(client.id, at, { keyed: 3 });
    await enable("required");
    await enable("optional");
    const series = await as(engineer).rollout.series({ granularity: "hour", clientIds: [] });
    assert.equal(series.since.getTime(), hourBucket(at).getTime(), "not 48 hours of nothing before it");
    assert.equal(series.all.length, 6);
    assert.deepEqual(
      series.modeChanges.slice(-2).map((m) => [m.scope, m.to]),
      [
        ["global", "required"],
        ["global", "optional"],
      ],
    );
  });
});
