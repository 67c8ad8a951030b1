import type { IdempotencyRecord, WorkResult } from "~/server/idempotency";
import { staffRefundAuditStatement } from "~/server/audit/staffRefundAudit";
import { keylessCountStatement } from "~/server/rollout/counters";

/**
 * What every finished operation stores beside its own rows, whoever finishes it (the request, a retry, the
 * sweeper, the reconciliation, a settling GET): applied to every work result on its way to the completion, in
 * its one transaction. A record completes exactly once (the completion is fenced), so each of these is written
 * exactly once, at no extra commit.
 *
 * - A keyless request's count for the rollout (rollout/counters.ts): every keyless request that got a record is
 *   counted in the transaction that stores its outcome.
 * - A refund a person started in the dashboard: its audit entry, with who, what, why and the outcome
 *   (audit/staffRefundAudit.ts), however it finishes.
 */
export function withCompletionWrites(record: IdempotencyRecord, result: WorkResult): WorkResult {
  if (result.kind !== "complete") return result;
  const count =
    record.idempotencyKey === null ? keylessCountStatement(record.apiClientId, record.route, record.createdAt) : null;
  const audit = staffRefundAuditStatement(record, result);
  const writes = [count, audit].filter((w) => w !== null);
  return writes.length === 0 ? result : { ...result, writes: [...result.writes, ...writes] };
}
