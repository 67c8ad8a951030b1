/**
 * The fold of closed hours' request counts (src/server/rollout/foldCounts.ts):
 * shard rows moved, summed, into the client's hour and day. Counts decide
 * whether enforcing the header is safe, so a fold must neither lose nor
 * double one, also while writers add to the hour it folds and while another
 * sweeper folds at the same time; and what the dashboard reads (the hourly and
 * daily series, the rollout status) must be the same before and after.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { atomically, execute } from "~/server/db";
import { countKeylessRequest, hourBucket, keylessCountStatement } from "~/server/rollout/counters";
import { foldClosedHours } from "~/server/rollout/foldCounts";
import { keylessSeries, rolloutStatus } from "~/server/rollout/stats";
import { runSweep } from "~/server/sweep/runSweep";
import { closeConnections, db, newApiClient } from "./helpers";

const HOUR = 3_600_000;
const ROUTE = CHARGES_ROUTE;

after(closeConnections);

/** Adds to one shard row of a client's hour, as counters.ts writes it (one statement, through the driver). */
const add = (
  apiClientId: number,
  at: Date,
  shard: number,
  c: { keyed?: number; keyless?: number; rejected?: number },
) =>
  execute({
    sql: `INSERT INTO request_count_buckets
            (api_client_id, bucket_start, shard, keyed, keyless, keyless_rejected, last_keyless_at)
          VALUES (?, ?, ?, ?, ?, ?, ?)
          ON DUPLICATE KEY UPDATE keyed = keyed + VALUES(keyed), keyless = keyless + VALUES(keyless),
            keyless_rejected = keyless_rejected + VALUES(keyless_rejected)`,
    values: [apiClientId, hourBucket(at), shard, c.keyed ?? 0, c.keyless ?? 0, c.rejected ?? 0, c.keyless ? at : null],
  });

const shardRowsOf = (apiClientId: number) =>
  db.requestCountBucket.findMany({ where: { apiClientId }, orderBy: [{ bucketStart: "asc" }, { shard: "asc" }] });
const hoursOf = (apiClientId: number) =>
  db.requestCountHour.findMany({ where: { apiClientId }, orderBy: { bucketStart: "asc" } });
const daysOf = (apiClientId: number) =>
  db.requestCountDay.findMany({ where: { apiClientId }, orderBy: { day: "asc" } });

/** What the dashboard shows for one client: both series and its line of the rollout status. */
async function dashboardView(apiClientId: number, now: Date) {
  const [day, hour, status] = await Promise.all([
    keylessSeries("day", [apiClientId], now),
    keylessSeries("hour", [apiClientId], now),
    rolloutStatus(now),
  ]);
  return {
    day: day.clients[0]!.points,
    hour: hour.clients[0]!.points,
    status: status.clients.find((c) => c.apiClientId === apiClientId),
  };
}

describe("folding closed hours", () => {
  test("sums each closed hour into one row and its day; the series and the status read the same", async () => {
    const client = await newApiClient("fold");
    const now = new Date();
    const thisHour = hourBucket(now);
    const threeDaysAgo = new Date(thisHour.getTime() - 72 * HOUR + 10 * 60_000);
    const nextHour = new Date(threeDaysAgo.getTime() + HOUR);
    const yesterday = new Date(thisHour.getTime() - 20 * HOUR + 30 * 60_000);
    await add(client.id, threeDaysAgo, 1, { keyed: 5, keyless: 2 });
    await add(client.id, threeDaysAgo, 7, { keyed: 3, keyless: 1, rejected: 1 });
    await add(client.id, threeDaysAgo, 16, { keyed: 1 });
    await add(client.id, nextHour, 4, { keyed: 10 });
    await add(client.id, yesterday, 2, { keyed: 4, keyless: 3 });
    await add(client.id, yesterday, 9, { keyless: 1 });
    await add(client.id, now, 3, { keyed: 6, keyless: 1 });
    await add(client.id, now, 5, { keyed: 2 });
    const before = await dashboardView(client.id, now);

    assert.ok((await foldClosedHours({ now })) >= 6);

    const hours = await hoursOf(client.id);
    assert.deepEqual(
      hours.map((r) => [r.bucketStart.getTime(), r.keyed, r.keyless, r.keylessRejected]),
      [
        [hourBucket(threeDaysAgo).getTime(), 9, 3, 1],
        [hourBucket(nextHour).getTime(), 10, 0, 0],
        [hourBucket(yesterday).getTime(), 4, 4, 0],
      ],
      "one row per closed hour, with the sum of its shards",
    );
    assert.equal(hours[0]!.lastKeylessAt?.getTime(), threeDaysAgo.getTime());
    assert.deepEqual(
      (await shardRowsOf(client.id)).map((r) => [r.bucketStart.getTime(), r.shard]),
      [
        [thisHour.getTime(), 3],
        [thisHour.getTime(), 5],
      ],
      "the closed hours' shard rows are gone; the open hour is left to its writers",
    );
    const days = await daysOf(client.id);
    const dayOf = (d: Date) => d.toISOString().slice(0, 10);
    assert.deepEqual(
      days.map((d) => [dayOf(d.day), d.keyed, d.keyless, d.keylessRejected]),
      dayOf(threeDaysAgo) === dayOf(nextHour)
        ? [
            [dayOf(threeDaysAgo), 19, 3, 1],
            [dayOf(yesterday), 4, 4, 0],
          ]
        : [
            [dayOf(threeDaysAgo), 9, 3, 1],
            [dayOf(nextHour), 10, 0, 0],
            [dayOf(yesterday), 4, 4, 0],
          ],
    );
    assert.deepEqual(await dashboardView(client.id, now), before, "the dashboard reads the same numbers");

    // Folding again changes nothing: nothing closed is left to fold for this client.
    await foldClosedHours({ now });
    assert.deepEqual(await dashboardView(client.id, now), before);
  });

  test("every sweep folds", async () => {
    const client = await newApiClient("fold-sweep");
    await add(client.id, new Date(Date.now() - 3 * HOUR), 6, { keyed: 3 });
    await runSweep({ reconcile: false });
    assert.deepEqual(await shardRowsOf(client.id), []);
    assert.deepEqual(
      (await hoursOf(client.id)).map((h) => h.keyed),
      [3],
    );
  });

  test("a late count into a folded hour is read at once and folded by the next fold", async () => {
    const client = await newApiClient("fold-late");
    const now = new Date();
    const earlier = new Date(hourBucket(now).getTime() - 30 * HOUR + 60_000);
    await add(client.id, earlier, 3, { keyed: 2, keyless: 1 });
    await foldClosedHours({ now });
    // The sweeper completes a keyless record that a crash left: counted in the hour its request came in.
    await countKeylessRequest(client.id, ROUTE, { at: earlier });
    const day = async () =>
      (await keylessSeries("day", [client.id], now)).clients[0]!.points.find((p) => p.keyless > 0)!;
    assert.deepEqual(
      [(await day()).keyed, (await day()).keyless],
      [2, 2],
      "the day is its folded row plus the late one",
    );
    await foldClosedHours({ now });
    assert.deepEqual([(await day()).keyed, (await day()).keyless], [2, 2]);
    assert.deepEqual(await shardRowsOf(client.id), []);
    assert.deepEqual(
      (await hoursOf(client.id)).map((r) => [r.keyed, r.keyless]),
      [[2, 2]],
    );
  });

  test("writers and two sweepers folding the same hour at once lose and double nothing", async () => {
    const client = await newApiClient("fold-race");
    const now = new Date();
    const hour = new Date(hourBucket(now).getTime() - 5 * HOUR + 60_000);
    const WRITES = 400;
    let written = 0;
    const rounds = [0, 0];
    // Half the writers count as a refused keyless request does (one statement on its own), half as a keyless
    // record's completion does: inside the completion's transaction (atomically), after the fence's lock (a row
    // of a scratch table stands in for the record's).
    const fences = `test_fold_fences_${process.pid}`;
    await execute({ sql: `CREATE TABLE ${fences} (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB`, values: [] });
    await execute({ sql: `INSERT INTO ${fences} VALUES (1, 0), (3, 0), (5, 0), (7, 0)`, values: [] });
    const viaCompletion = (writer: number) =>
      atomically([
        { sql: `UPDATE ${fences} SET n = n + 1 WHERE id = ?`, values: [writer] },
        keylessCountStatement(client.id, ROUTE, hour),
      ]);
    const writers = Array.from({ length: 8 }, async (_, w) => {
      // At least WRITES, and on until both sweepers have folded twice while the writers wrote (on a loaded
      // machine a fold can take longer than 400 writes).
      while (written < WRITES || rounds.some((r) => r < 2)) {
        written++;
        if (w % 2 === 0) await countKeylessRequest(client.id, ROUTE, { at: hour });
        else assert.equal(await viaCompletion(w), true);
      }
    });
    let folding = true;
    const folders = Array.from({ length: 2 }, async (_, f) => {
      while (folding) {
        await foldClosedHours({ now, batchSize: 7, budgetMs: 0 });
        rounds[f]!++;
      }
    });
    await Promise.all(writers).finally(() => execute({ sql: `DROP TABLE ${fences}`, values: [] }));
    folding = false;
    await Promise.all(folders);
    assert.ok(
      rounds.every((r) => r > 1),
      `both sweepers folded while the writers wrote (${rounds})`,
    );
    await foldClosedHours({ now });

    assert.deepEqual(await shardRowsOf(client.id), []);
    assert.deepEqual(
      (await hoursOf(client.id)).map((r) => r.keyless),
      [written],
      "every count, once, in the folded hour",
    );
    assert.deepEqual(
      (await daysOf(client.id)).map((d) => d.keyless),
      [written],
    );
  });
});
