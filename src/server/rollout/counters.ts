import { execute, retryOnLockConflict, type Statement } from "~/server/db";
import { log } from "~/server/observability/log";
import { registerRetained } from "~/server/observability/retained";

export function hourBucket(at: Date): Date {
  const bucket = new Date(at);
  bucket.setUTCMinutes(0, 0, 0);
  return bucket;
}

/** How long keyed counts wait in memory before they are written. */
const KEYED_FLUSH_INTERVAL_MS = 1_000;

/**
 * Each client's hour is counted on this many rows, one picked at random per
 * write, and read as their sum. On one row, every keyless request of a client
 * queued on that row's lock until the write before it had committed (flushed
 * its log): the count was the slowest step of a keyless charge. Once an hour
 * has closed, the sweeper folds its rows into one (foldCounts.ts).
 */
export const COUNT_SHARDS = 16;

export type BucketCount = {
  apiClientId: number;
  /** The money route, as the records name it ("POST /api/charges"): every count is per route. */
  route: string;
  bucketStart: Date;
  /** Keyed operations: requests whose key made a new record. */
  keyed: number;
  /** Keyed HTTP requests, retries and replays included (a separate, labelled figure). */
  keyedAttempts: number;
  /** Keyless requests accepted. */
  keyless: number;
  /** Keyless requests refused because the header was required (globally, or for their client). */
  keylessRejected: number;
  /** The last accepted keyless request: a refused one never moves "clean from". */
  lastKeylessAt: Date | null;
};

const NOTHING = { keyed: 0, keyedAttempts: 0, keyless: 0, keylessRejected: 0, lastKeylessAt: null };

/** Adds to the client's hourly buckets; one statement, so concurrent writers never lose a count. */
function addToBuckets(counts: BucketCount[]): Statement {
  return {
    sql: `INSERT INTO request_count_buckets
            (api_client_id, bucket_start, route, shard, keyed, keyed_attempts, keyless, keyless_rejected,
             last_keyless_at)
          VALUES ${counts.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}
          ON DUPLICATE KEY UPDATE
            keyed = keyed + VALUES(keyed),
            keyed_attempts = keyed_attempts + VALUES(keyed_attempts),
            keyless = keyless + VALUES(keyless),
            keyless_rejected = keyless_rejected + VALUES(keyless_rejected),
            last_keyless_at = COALESCE(GREATEST(last_keyless_at, VALUES(last_keyless_at)), last_keyless_at,
                                       VALUES(last_keyless_at))`,
    values: counts.flatMap((c) => [
      c.apiClientId,
      c.bucketStart,
      c.route,
      Math.floor(Math.random() * COUNT_SHARDS),
      c.keyed,
      c.keyedAttempts,
      c.keyless,
      c.keylessRejected,
      c.lastKeylessAt,
    ]),
  };
}

/**
 * The count of one keyless POST, as a statement: accepted, or refused (counted
 * apart, and never as the client's last keyless request, so that refusing
 * traffic after enforcing never moves "clean from"). A keyless request that
 * gets a record is counted by the transaction that completes it
 * (charges/chargeRows.ts): no write of its own in the request path, and never
 * lost, because a record left by a crash is completed by the sweeper, and
 * counted then. Keyless traffic reaching zero is what tells engineers
 * enforcing the header is safe.
 */
export function keylessCountStatement(
  apiClientId: number,
  route: string,
  at: Date,
  { refused = false } = {},
): Statement {
  const bucketStart = hourBucket(at);
  return addToBuckets([
    refused
      ? { ...NOTHING, apiClientId, route, bucketStart, keylessRejected: 1 }
      : { ...NOTHING, apiClientId, route, bucketStart, keyless: 1, lastKeylessAt: at },
  ]);
}

/**
 * Counts a keyless POST that was answered without a record: refused (the header required, globally or for its
 * client: counted as refused only, which the rollout page shows per client), invalid, or its client gone.
 */
export async function countKeylessRequest(
  apiClientId: number,
  route: string,
  { refused = false, at = new Date() } = {},
): Promise<void> {
  // A deadlock with the sweeper's fold of the same hour rolls this one statement back whole: safe to send again.
  await retryOnLockConflict(() => execute(keylessCountStatement(apiClientId, route, at, { refused })));
}

/** Keyed counts of this process not yet written, by client and hour. */
const pendingKeyed = new Map<string, BucketCount>();
let flushTimer: NodeJS.Timeout | undefined;
registerRetained("keyed counts not yet written", () => pendingKeyed.size);

/**
 * Counts one keyed POST (an attempt). Keyed requests only give the keyless
 * share its denominator; they are summed in memory and written once a second.
 * A crash loses at most a second of keyed counts, never a keyless one.
 */
export function countKeyedRequest(apiClientId: number, route: string, at = new Date()): void {
  holdKeyed({ ...NOTHING, apiClientId, route, bucketStart: hourBucket(at), keyedAttempts: 1 });
}

/**
 * Counts one keyed operation: an attempt whose key made a new record (its
 * retries, replays and 409s are attempts only). This is the keyless share's
 * denominator, operation against operation, as a keyless request is one.
 */
export function countKeyedOperation(apiClientId: number, route: string, at = new Date()): void {
  holdKeyed({ ...NOTHING, apiClientId, route, bucketStart: hourBucket(at), keyed: 1 });
}

function holdKeyed(count: BucketCount) {
  const id = `${count.apiClientId}:${count.route}:${count.bucketStart.getTime()}`;
  const pending = pendingKeyed.get(id);
  if (pending) {
    pending.keyed += count.keyed;
    pending.keyedAttempts += count.keyedAttempts;
  } else pendingKeyed.set(id, { ...count });
  if (flushTimer === undefined) flushTimer = setTimeout(() => void flushKeyedCounts(), KEYED_FLUSH_INTERVAL_MS).unref();
}

/**
 * Writes the keyed counts held in memory; kept for the next round if the
 * database refuses. In primary-key order, the order the fold locks rows in,
 * so the two never wait on each other in a circle.
 */
async function flushKeyedCounts(): Promise<void> {
  flushTimer = undefined;
  const batch = [...pendingKeyed.values()].sort(
    (a, b) =>
      a.apiClientId - b.apiClientId ||
      a.bucketStart.getTime() - b.bucketStart.getTime() ||
      (a.route < b.route ? -1 : a.route > b.route ? 1 : 0),
  );
  pendingKeyed.clear();
  if (batch.length === 0) return;
  try {
    await execute(addToBuckets(batch));
  } catch (error) {
    log.warn({ err: error, counts: batch.length }, "keyed request counts not written; kept for the next flush");
    batch.forEach(holdKeyed);
  }
}
