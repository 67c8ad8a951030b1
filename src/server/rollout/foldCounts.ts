/**
 * The fold: once an hour has closed, the sweeper moves its shard rows (up to
 * 16 per client, counters.ts) out of request_count_buckets, summed, into
 * request_count_hours (one row per client and hour) and request_count_days
 * (one per client and day). Past hours then cost one row per client, and
 * past days one row per client: the daily rollout series reads a month of
 * days instead of a month of hours times their shards (issue 16).
 *
 * Exact, whatever runs beside it, because each batch, in one transaction,
 * locks its rows by primary key (FOR UPDATE), adds exactly the amounts it
 * locked to the hours and days, and deletes exactly those rows. A late writer
 * to a folded hour (the sweeper completing a keyless record a crash left,
 * counted in the hour its request came in) waits for the batch, then writes a
 * new shard row, which the next fold moves. Two sweepers folding at once
 * cannot move a row twice: the second waits for the first's lock, then finds
 * the row gone. An hour's total is always its folded row plus its shard rows
 * still here; the series and the rollout status read both in one statement
 * (one snapshot).
 *
 * No deadlock with the request path: its writers change one shard row at a
 * time (the keyed flush several, in the same key order), and lock it by
 * primary key before its indexes; the fold locks by primary key too, in key
 * order, after a plain read that finds the candidates, and writes its sums to
 * tables no writer touches. (Locking through the secondary index, or folding
 * into a row of the same table, let a writer and the fold each hold what the
 * other waited for: test/countFold.test.ts found both.) READ COMMITTED: no gap
 * locks, so writers of the open hour never wait on a batch.
 *
 * The enforcement decision is unchanged by a fold: a shard row's last keyless
 * request is its last accepted one (a refused one never sets it), and so is
 * its hour's.
 */
import { inTransaction, retryOnLockConflict, type Transaction } from "~/server/db";
import { hourBucket } from "./counters";

/** An hour is folded once it has been closed this long (keyed counts are written within a second). */
const FOLD_AFTER_MS = 5 * 60_000;
const BATCH_SIZE = 2_000;
/** Like the prune, the fold rests three times as long as each batch took. */
const REST_PER_BATCH_TIME = 3;

type ShardKey = { apiClientId: number; bucketStart: Date; route: string; shard: number };
type Counts = { keyed: number; keyedAttempts: number; keyless: number; keylessRejected: number };
type ShardRow = ShardKey & Counts & { lastKeylessAt: Date | null };
type Sum = Counts & { lastKeylessAt: Date | null };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Folds every hour that closed more than FOLD_AFTER_MS ago, in batches, until
 * none is left or `budgetMs` has passed. Returns the shard rows folded.
 */
export async function foldClosedHours({
  now = new Date(),
  budgetMs = Infinity,
  batchSize = BATCH_SIZE,
}: {
  now?: Date;
  budgetMs?: number;
  batchSize?: number;
} = {}): Promise<number> {
  const before = hourBucket(new Date(now.getTime() - FOLD_AFTER_MS));
  const deadline = performance.now() + budgetMs;
  let folded = 0;
  for (;;) {
    const started = performance.now();
    const rows = await retryOnLockConflict(() =>
      inTransaction("READ COMMITTED", (tx) => foldBatch(tx, before, batchSize)),
    );
    folded += rows;
    if (rows < batchSize || performance.now() >= deadline) return folded;
    await sleep((performance.now() - started) * REST_PER_BATCH_TIME);
  }
}

const byKey = (rows: ShardKey[]) => ({
  sql: `(api_client_id, bucket_start, route, shard) IN (${rows.map(() => "(?, ?, ?, ?)").join(", ")})`,
  values: rows.flatMap((r) => [r.apiClientId, r.bucketStart, r.route, r.shard]),
});

/** Adds `row` to the sum kept under `id`. */
function addTo<K>(sums: Map<string, K & Sum>, id: string, key: K, row: ShardRow) {
  const sum = sums.get(id) ?? {
    ...key,
    keyed: 0,
    keyedAttempts: 0,
    keyless: 0,
    keylessRejected: 0,
    lastKeylessAt: null,
  };
  sum.keyed += row.keyed;
  sum.keyedAttempts += row.keyedAttempts;
  sum.keyless += row.keyless;
  sum.keylessRejected += row.keylessRejected;
  if (row.lastKeylessAt && (!sum.lastKeylessAt || row.lastKeylessAt > sum.lastKeylessAt))
    sum.lastKeylessAt = row.lastKeylessAt;
  sums.set(id, sum);
}

/** One batch; returns how many candidates it found (fewer than asked: nothing closed is left). */
async function foldBatch(tx: Transaction, before: Date, batchSize: number): Promise<number> {
  const candidates = await tx.rows<ShardKey>({
    sql: `SELECT api_client_id AS apiClientId, bucket_start AS bucketStart, route, shard FROM request_count_buckets
           WHERE bucket_start < ? ORDER BY bucket_start LIMIT ?`,
    values: [before, batchSize],
  });
  if (candidates.length === 0) return 0;
  const candidateKeys = byKey(candidates);
  // Whatever changed since the plain read: these are the rows and amounts this batch owns until it commits.
  const rows = await tx.rows<ShardRow>({
    sql: `SELECT api_client_id AS apiClientId, bucket_start AS bucketStart, route, shard, keyed,
                 keyed_attempts AS keyedAttempts, keyless, keyless_rejected AS keylessRejected,
                 last_keyless_at AS lastKeylessAt
            FROM request_count_buckets WHERE ${candidateKeys.sql}
           ORDER BY api_client_id, bucket_start, route, shard FOR UPDATE`,
    values: candidateKeys.values,
  });
  if (rows.length === 0) return candidates.length;

  type Route = { apiClientId: number; route: string };
  const hours = new Map<string, { bucketStart: Date } & Route & Sum>();
  const days = new Map<string, { day: string } & Route & Sum>();
  for (const r of rows) {
    const day = r.bucketStart.toISOString().slice(0, 10);
    const route = { apiClientId: r.apiClientId, route: r.route };
    addTo(hours, `${r.apiClientId}:${r.route}:${r.bucketStart.getTime()}`, { bucketStart: r.bucketStart, ...route }, r);
    addTo(days, `${r.apiClientId}:${r.route}:${day}`, { day, ...route }, r);
  }
  const added = `keyed = keyed + VALUES(keyed), keyed_attempts = keyed_attempts + VALUES(keyed_attempts),
                 keyless = keyless + VALUES(keyless), keyless_rejected = keyless_rejected + VALUES(keyless_rejected)`;
  await tx.execute({
    sql: `INSERT INTO request_count_hours
            (bucket_start, api_client_id, route, keyed, keyed_attempts, keyless, keyless_rejected, last_keyless_at)
          VALUES ${[...hours.values()].map(() => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}
          ON DUPLICATE KEY UPDATE ${added},
            last_keyless_at = COALESCE(GREATEST(last_keyless_at, VALUES(last_keyless_at)), last_keyless_at,
                                       VALUES(last_keyless_at))`,
    values: [...hours.values()].flatMap((h) => [
      h.bucketStart,
      h.apiClientId,
      h.route,
      h.keyed,
      h.keyedAttempts,
      h.keyless,
      h.keylessRejected,
      h.lastKeylessAt,
    ]),
  });
  await tx.execute({
    sql: `INSERT INTO request_count_days (day, api_client_id, route, keyed, keyed_attempts, keyless, keyless_rejected)
          VALUES ${[...days.values()].map(() => "(?, ?, ?, ?, ?, ?, ?)").join(", ")}
          ON DUPLICATE KEY UPDATE ${added}`,
    values: [...days.values()].flatMap((d) => [
      d.day,
      d.apiClientId,
      d.route,
      d.keyed,
      d.keyedAttempts,
      d.keyless,
      d.keylessRejected,
    ]),
  });
  const lockedKeys = byKey(rows);
  const deleted = await tx.execute({
    sql: `DELETE FROM request_count_buckets WHERE ${lockedKeys.sql}`,
    values: lockedKeys.values,
  });
  // The rows are locked: anything else means the sums would not add up, so nothing of this batch is kept.
  if (deleted !== rows.length) throw new Error(`fold: deleted ${deleted} of the ${rows.length} rows it summed`);
  return candidates.length;
}
