import { env } from "~/env";
import { inTransaction, queryRows, execute } from "~/server/db";
import { utcDatetime } from "~/server/events/ids";
import { EVENT_COLUMNS, type EventRow, serializeEvent } from "~/server/events/list";
import { log } from "~/server/observability/log";
import { postOnce, type PostResult } from "./post";
import { nextAttemptAt } from "./schedule";
import { signedHeaders } from "./signing";

/**
 * The dispatcher: claims due deliveries and posts them, at least once each, until a 2xx. Any number run at once
 * (npm start runs one beside the app: src/worker/dispatcher.ts): a claim is a short transaction that takes due
 * rows with FOR UPDATE SKIP LOCKED (two dispatchers never take the same row, and none waits on another) and moves
 * their next attempt past the attempt's timeout: a lease. The POST happens after the commit, holding nothing; its
 * result is written fenced on the attempt number the claim set, so a dispatcher that stalled past its lease cannot
 * overwrite a later attempt's result. A dispatcher that dies mid-POST leaves the row to be claimed again when the
 * lease ends: every state is in the database, nothing in memory, so deliveries survive kills and restarts.
 */
/** A claimed delivery: its attempt number and its lease's end, which together fence what this attempt writes. */
type Claimed = { id: bigint; attempts: number; leaseEnd: string };

const LEASE_MARGIN_MS = 5_000;

/** Claims up to `limit` due deliveries (their attempt number counted up now). */
export async function claimDue(limit: number, now = new Date()): Promise<Claimed[]> {
  return inTransaction("READ COMMITTED", async (tx) => {
    const due = await tx.rows<{ id: bigint; attempts: number }>({
      sql: `SELECT id, attempts FROM webhook_deliveries
             WHERE state = 'pending' AND next_attempt_at <= ?
             ORDER BY next_attempt_at LIMIT ${Math.max(1, Math.floor(limit))}
             FOR UPDATE SKIP LOCKED`,
      values: [utcDatetime(now)],
    });
    if (due.length === 0) return [];
    const leaseEnd = utcDatetime(new Date(now.getTime() + env.WEBHOOK_TIMEOUT_MS + LEASE_MARGIN_MS));
    await tx.execute({
      sql: `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?
             WHERE id IN (${due.map(() => "?").join(", ")})`,
      values: [leaseEnd, ...due.map((d) => d.id)],
    });
    return due.map((d) => ({ id: d.id, attempts: d.attempts + 1, leaseEnd }));
  });
}

type DeliveryRow = EventRow & {
  deliveryId: bigint;
  deliveryCreatedAt: Date;
  endpointId: string | null;
  url: string | null;
  enabled: number | null;
  secret: string | null;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
  failingSince: Date | null;
};

async function deliveryOf(id: bigint): Promise<DeliveryRow | undefined> {
  const [row] = await queryRows<DeliveryRow>({
    sql: `SELECT d.id AS deliveryId, d.created_at AS deliveryCreatedAt, w.id AS endpointId, w.url, w.enabled,
                 w.secret, w.previous_secret AS previousSecret, w.previous_secret_until AS previousSecretUntil,
                 w.failing_since AS failingSince,
                 ${EVENT_COLUMNS.replace(/(^|,\s*)(\w+)/g, "$1ev.$2")}
            FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id
            LEFT JOIN webhook_endpoints w ON w.id = d.endpoint_id
           WHERE d.id = ?`,
    values: [id],
  });
  return row;
}

const succeeded = (result: PostResult) => result.status !== null && result.status >= 200 && result.status < 300;

/** One attempt's row. `manual`: a "send again" from the dashboard. */
async function recordAttempt(deliveryId: bigint, attempt: number, startedAt: Date, result: PostResult) {
  await execute({
    sql: `INSERT INTO webhook_attempts (delivery_id, attempt, started_at, duration_ms, status, error, response_body)
          VALUES (?, ?, ?, ?, ?, ?, ?)`,
    values: [
      deliveryId,
      attempt,
      utcDatetime(startedAt),
      result.durationMs,
      result.status,
      result.error,
      result.body === null ? null : result.body.slice(0, 1024),
    ],
  });
}

/** The endpoint's failing streak: ended by a 2xx, begun by a failure, and past WEBHOOK_DISABLE_AFTER_MS: disabled. */
async function noteEndpointHealth(row: DeliveryRow, ok: boolean, result: PostResult, now: Date) {
  // Written only when it changes: each write locks the endpoint's row, which every completion of the client reads.
  if (ok) {
    if (row.failingSince !== null)
      await execute({
        sql: "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ?",
        values: [row.endpointId],
      });
    return;
  }
  if (row.failingSince === null) {
    await execute({
      sql: "UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS NULL",
      values: [utcDatetime(now), row.endpointId],
    });
    return;
  }
  if (now.getTime() - row.failingSince.getTime() < env.WEBHOOK_DISABLE_AFTER_MS) return;
  const last = result.status !== null ? `HTTP ${result.status}` : (result.error ?? "no answer");
  const reason = `No 2xx since ${row.failingSince.toISOString()} (last: ${last}); disabled ${now.toISOString()}.`;
  const disabled = await execute({
    sql: `UPDATE webhook_endpoints SET enabled = FALSE, disabled_reason = ?, disabled_at = ?
           WHERE id = ? AND enabled AND failing_since IS NOT NULL AND failing_since <= ?`,
    values: [reason.slice(0, 500), utcDatetime(now), row.endpointId, utcDatetime(row.failingSince)],
  });
  if (disabled > 0) log.warn({ endpoint: row.endpointId, reason }, "webhook endpoint disabled");
}

/** Posts one claimed delivery and records what came of it. */
export async function deliver(claimed: Claimed): Promise<void> {
  const row = await deliveryOf(claimed.id);
  if (!row) return;
  // This attempt's own lease: a "send again" meanwhile (due now) or a later claim moves it, and this attempt's
  // result then changes nothing (the delivery is posted again: at least once).
  const fence = [claimed.id, claimed.attempts, claimed.leaseEnd];
  if (row.endpointId === null || !row.enabled) {
    // Deleted or disabled meanwhile: nothing is sent; a re-enabled endpoint's owner can send it again.
    await execute({
      sql: `UPDATE webhook_deliveries SET state = 'cancelled', last_error = ?
             WHERE id = ? AND attempts = ? AND next_attempt_at = ? AND state = 'pending'`,
      values: [row.endpointId === null ? "endpoint deleted" : "endpoint disabled", ...fence],
    });
    return;
  }
  const startedAt = new Date();
  const payload = JSON.stringify(serializeEvent(row));
  const keys = {
    secret: row.secret!,
    previousSecret: row.previousSecret,
    previousSecretUntil: row.previousSecretUntil,
  };
  const headers = signedHeaders(keys, row.id, payload, startedAt);
  const result = await postOnce(row.url!, payload, headers, env.WEBHOOK_TIMEOUT_MS);
  const ok = succeeded(result);
  const now = new Date();
  await recordAttempt(claimed.id, claimed.attempts, startedAt, result);
  const next = ok ? null : nextAttemptAt(row.deliveryCreatedAt, claimed.attempts, now);
  const state = ok ? "delivered" : next === null ? "failed" : "pending";
  await execute({
    sql: `UPDATE webhook_deliveries
             SET state = ?, next_attempt_at = ?, last_status = ?, last_error = ?, delivered_at = ?
           WHERE id = ? AND attempts = ? AND state = 'pending'`,
    values: [state, utcDatetime(next ?? now), result.status, result.error, ok ? utcDatetime(now) : null, ...fence],
  });
  await noteEndpointHealth(row, ok, result, now);
}

const recordingFailed = (id: bigint) => (error: unknown) =>
  // Its lease ends and a later round takes it again: at least once, whatever failed here.
  log.error({ err: error, delivery: String(id) }, "webhook delivery failed to record");

/** One round: claim what is due (up to `limit`) and post each; resolves when all are done. How many were claimed. */
export async function dispatchOnce(limit = env.WEBHOOK_CONCURRENCY): Promise<number> {
  const claimed = await claimDue(limit);
  await Promise.all(claimed.map((c) => deliver(c).catch(recordingFailed(c.id))));
  return claimed.length;
}

/**
 * Runs until `stopping()`, keeping up to WEBHOOK_CONCURRENCY posts in flight: a slow endpoint holds one slot,
 * not the round. Claims again at once while there was work and room, else after WEBHOOK_POLL_INTERVAL_MS.
 */
export async function runDispatcher(stopping: () => boolean): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  while (!stopping()) {
    const room = env.WEBHOOK_CONCURRENCY - inFlight.size;
    let claimed: Claimed[] = [];
    if (room > 0) {
      try {
        claimed = await claimDue(room);
      } catch (error) {
        log.error({ err: error }, "webhook claim failed"); // the database is away: try again later
      }
    }
    for (const c of claimed) {
      const posting: Promise<void> = deliver(c)
        .catch(recordingFailed(c.id))
        .finally(() => inFlight.delete(posting));
      inFlight.add(posting);
    }
    if (claimed.length === 0 || inFlight.size >= env.WEBHOOK_CONCURRENCY) {
      const pause = new Promise((r) => setTimeout(r, env.WEBHOOK_POLL_INTERVAL_MS));
      await Promise.race([pause, ...(room > 0 ? [] : inFlight)]);
    }
  }
  await Promise.all(inFlight);
}
