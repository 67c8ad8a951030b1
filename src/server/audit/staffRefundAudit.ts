/**
 * The audit entry of a refund a person started in the dashboard, written by the transaction that completes its
 * operation (src/server/operations/completion.ts), whoever completes it: the person's request, a second click, a
 * retry or the sweeper (`finished_by`). A record completes exactly once, so the entry is written exactly once, in
 * the same transaction as the refund's row, with the outcome; a replayed click completes nothing and writes
 * nothing. Who, what and why come from the intention written before the operation was sent
 * (staff_refund_intentions, under the operation's key: staffIntentions.ts).
 */
import type { IdempotencyRecord, WorkResult } from "~/server/idempotency";
import type { Statement } from "~/server/db/statements";
import { isDashboardKey } from "~/server/http/idempotencyKeyHeader";

/** What the stored answer says happened: the refund's id, or the error's code. */
function outcomeOf(body: string): { refund: string | null; code: string | null } {
  try {
    const parsed = JSON.parse(body) as { id?: unknown; error?: { code?: unknown } };
    return {
      refund: typeof parsed.id === "string" ? parsed.id : null,
      code: typeof parsed.error?.code === "string" ? parsed.error.code : null,
    };
  } catch {
    return { refund: null, code: null };
  }
}

/**
 * One INSERT that always adds exactly one row (the completion commits only if every write landed): from the
 * intention when there is one, else as the system's, naming the key (a record made before intentions existed).
 */
export function staffRefundAuditStatement(
  record: IdempotencyRecord,
  result: Extract<WorkResult, { kind: "complete" }>,
): Statement | null {
  if (!isDashboardKey(record.idempotencyKey)) return null;
  const { refund, code } = outcomeOf(result.response.body);
  const refunded = result.response.status === 201 && refund !== null;
  const finishedBy = result.finishedBy ?? "request";
  const sql = `INSERT INTO audit_events
      (created_at, action, actor_type, actor_staff_id, actor_label, target_type, target_id, details, ip_address,
       user_agent)
    SELECT UTC_TIMESTAMP(6), ?, IF(i.id IS NULL, 'system', 'staff'), i.requested_by_staff_id,
      COALESCE(i.requested_by_label, 'dashboard'), 'charge', i.charge_id,
      JSON_MERGE_PATCH(COALESCE(i.details, '{}'), JSON_OBJECT(
        'refund', ?, 'outcome', ?, 'status', ?, 'code', ?, 'finished_by', ?, 'key', ?,
        'amount_cents', i.amount_cents, 'currency', i.currency, 'reason', i.reason, 'note', i.note,
        'approved_by', i.decided_by_label)),
      i.ip_address, i.user_agent
    FROM (SELECT 1) AS one LEFT JOIN staff_refund_intentions i ON i.idempotency_key = ?`;
  const values = [
    refunded ? "refund.created" : "refund.failed",
    refund,
    refunded ? "refunded" : "not_refunded",
    result.response.status,
    code,
    finishedBy,
    record.idempotencyKey,
    record.idempotencyKey,
  ];
  return { sql, values };
}
