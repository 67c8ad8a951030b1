import { Prisma } from "~/generated/prisma/client";
import { db } from "~/server/db";

export function hourBucket(at: Date): Date {
  const bucket = new Date(at);
  bucket.setUTCMinutes(0, 0, 0);
  return bucket;
}

/** How long keyed counts wait in memory before they are written. */
const KEYED_FLUSH_INTERVAL_MS = 1_000;

type BucketCount = {
  apiClientId: number;
  bucketStart: Date;
  keyed: number;
  keyless: number;
  keylessRejected: number;
  lastKeylessAt: Date | null;
};

/** Adds to the client's hourly buckets; one statement, so concurrent writers never lose a count. */
async function addToBuckets(counts: BucketCount[]): Promise<void> {
  const rows = counts.map(
    (c) =>
      Prisma.sql`(${c.apiClientId}, ${c.bucketStart}, ${c.keyed}, ${c.keyless}, ${c.keylessRejected},
                  ${c.lastKeylessAt})`,
  );
  await db.$executeRaw`
    INSERT INTO request_count_buckets (api_client_id, bucket_start, keyed, keyless, keyless_rejected, last_keyless_at)
    VALUES ${Prisma.join(rows)}
    ON DUPLICATE KEY UPDATE
      keyed = keyed + VALUES(keyed),
      keyless = keyless + VALUES(keyless),
      keyless_rejected = keyless_rejected + VALUES(keyless_rejected),
      last_keyless_at = COALESCE(GREATEST(last_keyless_at, VALUES(last_keyless_at)), last_keyless_at, VALUES(last_keyless_at))`;
}

/** Keyed counts of this process not yet written, by client and hour. */
const pendingKeyed = new Map<string, BucketCount>();
let flushTimer: NodeJS.Timeout | undefined;

/**
 * Counts one POST in the client's bucket for this hour.
 *
 * A keyless request is written before it is answered, and says whether it was
 * refused (the header required for its client): keyless traffic reaching
 * zero is what tells engineers enforcing the header is safe, so none may go
 * uncounted. Keyed requests only give the share its denominator; they are
 * summed in memory and written once a second, because one upsert per request on
 * the client's single row for the hour serialises every request of that client
 * (replays included). A crash loses at most a second of keyed counts.
 */
export async function countChargeRequest(
  apiClientId: number,
  keyed: boolean,
  { refused = false, at = new Date() }: { refused?: boolean; at?: Date } = {},
): Promise<void> {
  const bucketStart = hourBucket(at);
  if (!keyed) {
    const keylessRejected = refused ? 1 : 0;
    await addToBuckets([{ apiClientId, bucketStart, keyed: 0, keyless: 1, keylessRejected, lastKeylessAt: at }]);
    return;
  }
  holdKeyed({ apiClientId, bucketStart, keyed: 1, keyless: 0, keylessRejected: 0, lastKeylessAt: null });
}

function holdKeyed(count: BucketCount) {
  const id = `${count.apiClientId}:${count.bucketStart.getTime()}`;
  const pending = pendingKeyed.get(id);
  if (pending) pending.keyed += count.keyed;
  else pendingKeyed.set(id, { ...count });
  flushTimer ??= setTimeout(() => void flushKeyedCounts(), KEYED_FLUSH_INTERVAL_MS).unref();
}

/** Writes the keyed counts held in memory; kept for the next round if the database refuses. */
async function flushKeyedCounts(): Promise<void> {
  flushTimer = undefined;
  const batch = [...pendingKeyed.values()];
  pendingKeyed.clear();
  if (batch.length === 0) return;
  try {
    await addToBuckets(batch);
  } catch (error) {
    console.warn(`keyed request counts not written, retrying: ${(error as Error).message.trim().split("\n").at(-1)}`);
    batch.forEach(holdKeyed);
  }
}
