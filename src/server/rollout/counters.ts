import { db } from "~/server/db";

export function hourBucket(at: Date): Date {
  const bucket = new Date(at);
  bucket.setUTCMinutes(0, 0, 0);
  return bucket;
}

/**
 * Counts one POST, keyed or keyless, in the client's bucket for this hour.
 * One upsert, so concurrent requests never lose a count.
 */
export async function countChargeRequest(apiClientId: number, keyed: boolean, at = new Date()): Promise<void> {
  const lastKeylessAt = keyed ? null : at;
  await db.$executeRaw`
    INSERT INTO request_count_buckets (api_client_id, bucket_start, keyed, keyless, last_keyless_at)
    VALUES (${apiClientId}, ${hourBucket(at)}, ${keyed ? 1 : 0}, ${keyed ? 0 : 1}, ${lastKeylessAt})
    ON DUPLICATE KEY UPDATE
      keyed = keyed + VALUES(keyed),
      keyless = keyless + VALUES(keyless),
      last_keyless_at = COALESCE(GREATEST(last_keyless_at, VALUES(last_keyless_at)), last_keyless_at, VALUES(last_keyless_at))`;
}
