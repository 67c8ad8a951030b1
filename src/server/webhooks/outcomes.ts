import { env } from "~/env";
import { inTransaction, execute } from "~/server/db";
import { utcDatetime } from "~/server/events/ids";
import { log } from "~/server/observability/log";
import { ANSWER_BYTES, type PostResult } from "./post";
import { nextAttemptAt } from "./schedule";

/** A claimed delivery: its attempt number and its lease's end, which together fence what this attempt writes. */
export type Claimed = { id: bigint; attempts: number; leaseEnd: string };

/** What one posted attempt came to, and what the claim read of its delivery and endpoint. */
export type Outcome = {
  claimed: Claimed;
  deliveryCreatedAt: Date;
  endpointId: string;
  failingSince: Date | null;
  startedAt: Date;
  finishedAt: Date;
  result: PostResult;
};

const succeeded = (result: PostResult) => result.status !== null && result.status >= 200 && result.status < 300;

/**
 * Writes a batch of attempts' outcomes in one transaction: one INSERT of their attempt rows, one UPDATE of their
 * deliveries, fenced per row on the attempt number and lease its claim set (a dispatcher that stalled past its lease
 * changes nothing: a later attempt owns the row), then each endpoint's failing streak. A statement per batch, not per
 * delivery, is what lets one dispatcher keep up with the app's commits.
 */
export async function recordOutcomes(batch: Outcome[]): Promise<void> {
  if (batch.length === 0) return;
  const rows = batch.map((o) => {
    const ok = succeeded(o.result);
    const next = ok ? null : nextAttemptAt(o.deliveryCreatedAt, o.claimed.attempts, o.finishedAt);
    const state = ok ? "delivered" : next === null ? "failed" : "pending";
    return { o, state, next: utcDatetime(next ?? o.finishedAt), deliveredAt: ok ? utcDatetime(o.finishedAt) : null };
  });
  await inTransaction("READ COMMITTED", async (tx) => {
    await tx.execute({
      sql: `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status, error, response_body)
            VALUES ${rows.map(() => "(?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
      values: rows.flatMap(({ o }) => [
        o.claimed.id,
        o.claimed.attempts,
        utcDatetime(o.startedAt),
        o.result.durationMs,
        o.result.status,
        o.result.error,
        o.result.body === null ? null : o.result.body.slice(0, ANSWER_BYTES),
      ]),
    });
    const results = rows
      .map(
        () => `SELECT CAST(? AS UNSIGNED) AS id, CAST(? AS SIGNED) AS attempts, CAST(? AS DATETIME(3)) AS lease_end,
                      CAST(? AS CHAR(16)) AS state, CAST(? AS DATETIME(3)) AS next_at, CAST(? AS SIGNED) AS status,
                      CAST(? AS CHAR(255)) AS error, CAST(? AS DATETIME(3)) AS delivered_at`,
      )
      .join(" UNION ALL ");
    await tx.execute({
      sql: `UPDATE webhook_deliveries d
              JOIN (${results}) r ON d.id = r.id AND d.attempts = r.attempts AND d.next_attempt_at = r.lease_end
               SET d.state = r.state, d.next_attempt_at = r.next_at, d.last_status = r.status,
                   d.last_error = r.error, d.delivered_at = r.delivered_at
             WHERE d.state = 'pending'`,
      values: rows.flatMap(({ o, state, next, deliveredAt }) => [
        o.claimed.id,
        o.claimed.attempts,
        o.claimed.leaseEnd,
        state,
        next,
        o.result.status,
        o.result.error,
        deliveredAt,
      ]),
    });
  });
  const byEndpoint = new Map<string, Outcome[]>();
  for (const o of batch) {
    const group = byEndpoint.get(o.endpointId);
    if (group) group.push(o);
    else byEndpoint.set(o.endpointId, [o]);
  }
  for (const outcomes of byEndpoint.values()) await noteEndpointHealth(outcomes);
}

/**
 * An endpoint's failing streak: ended by a 2xx, begun by a failure, and past WEBHOOK_DISABLE_AFTER_MS: disabled.
 * Written only when it changes: each write locks the endpoint's row, which every completion of the client reads.
 */
async function noteEndpointHealth(outcomes: Outcome[]) {
  const { endpointId, failingSince } = outcomes[0]!;
  if (outcomes.some((o) => succeeded(o.result))) {
    if (failingSince !== null)
      await execute({ sql: "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ?", values: [endpointId] });
    return;
  }
  const last = outcomes.at(-1)!;
  if (failingSince === null) {
    await execute({
      sql: "UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS NULL",
      values: [utcDatetime(last.finishedAt), endpointId],
    });
    return;
  }
  const now = last.finishedAt;
  if (now.getTime() - failingSince.getTime() < env.WEBHOOK_DISABLE_AFTER_MS) return;
  const answer = last.result.status !== null ? `HTTP ${last.result.status}` : (last.result.error ?? "no answer");
  const reason = `No 2xx since ${failingSince.toISOString()} (last: ${answer}); disabled ${now.toISOString()}.`;
  const disabled = await execute({
    sql: `UPDATE webhook_endpoints SET enabled = FALSE, disabled_reason = ?, disabled_at = ?
           WHERE id = ? AND enabled AND failing_since IS NOT NULL AND failing_since <= ?`,
    values: [reason.slice(0, 500), utcDatetime(now), endpointId, utcDatetime(failingSince)],
  });
  if (disabled > 0) log.warn({ endpoint: endpointId, reason }, "webhook endpoint disabled");
}

/**
 * Group commit: outcomes that arrive while a batch is being written wait and go together in the next one, so the
 * batch grows with the load and a lone outcome is written at once. Each caller's promise settles with its batch.
 */
export function outcomeWriter(write = recordOutcomes) {
  let queue: { outcome: Outcome; settle: (error?: unknown) => void }[] = [];
  let writing = false;
  const drain = async () => {
    writing = true;
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      const error = await write(batch.map((q) => q.outcome)).then(
        () => undefined,
        (e: unknown) => e ?? new Error("recording failed"),
      );
      for (const q of batch) q.settle(error);
    }
    writing = false;
  };
  return (outcome: Outcome) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ outcome, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!writing) void drain();
    });
}
