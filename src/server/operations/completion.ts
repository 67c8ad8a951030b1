import type { IdempotencyRecord, WorkResult } from "~/server/idempotency";
import { keylessCountStatement } from "~/server/rollout/counters";

/**
 * What every finished operation stores beside its own rows, whoever finishes it (the request, a retry, the
 * sweeper, the reconciliation, a settling GET): applied to every work result on its way to the completion, in
 * its one transaction. A record completes exactly once (the completion is fenced), so each of these is written
 * exactly once, at no extra commit.
 *
 * - A keyless request's count for the rollout (rollout/counters.ts): every keyless request that got a record is
 *   counted in the transaction that stores its outcome.
 */
export function withCompletionWrites(record: IdempotencyRecord, result: WorkResult): WorkResult {
  if (result.kind !== "complete" || record.idempotencyKey !== null) return result;
  const count = keylessCountStatement(record.apiClientId, record.route, record.createdAt);
  return { ...result, writes: [...result.writes, count] };
}
