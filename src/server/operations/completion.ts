import { eventWrite } from "~/server/events/write";
import type { EventDraft } from "~/server/events/types";
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
 * - The operation's event (src/server/events): what its work said happened (a charge succeeded or failed, a
 *   refund succeeded or failed), or a write-off; with its deliveries to the client's endpoints. A completion that
 *   does not commit leaves no event, and one that commits cannot leave without it.
 */
export function withCompletionWrites(record: IdempotencyRecord, result: WorkResult): WorkResult {
  if (result.kind !== "complete") return result;
  const count =
    record.idempotencyKey === null ? keylessCountStatement(record.apiClientId, record.route, record.createdAt) : null;
  const audit = staffRefundAuditStatement(record, result);
  const draft = completionEvent(record, result);
  const event = draft ? eventWrite(draft) : null;
  const writes = [count, audit, event].filter((w) => w !== null);
  return writes.length === 0 ? result : { ...result, writes: [...result.writes, ...writes] };
}

/** The event of a finished operation: its work's, or an operation.written_off for a write-off. */
function completionEvent(record: IdempotencyRecord, result: Extract<WorkResult, { kind: "complete" }>) {
  const operation = { requestId: record.id, idempotencyKey: record.idempotencyKey, apiClientId: record.apiClientId };
  if (result.event) return { ...operation, ...result.event } satisfies EventDraft;
  if (result.finishedBy !== "abandoned") return null;
  const answer = JSON.parse(result.response.body) as { error?: unknown };
  return {
    ...operation,
    type: "operation.written_off",
    chargeId: null,
    object: {
      object: "operation",
      route: record.route,
      request_id: String(record.id),
      idempotency_key: record.idempotencyKey,
      status: result.response.status,
      error: answer.error ?? null,
    },
  } satisfies EventDraft;
}
