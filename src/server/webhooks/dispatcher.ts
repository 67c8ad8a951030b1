import { env } from "~/env";
import { inTransaction, queryRows, execute } from "~/server/db";
import { utcDatetime } from "~/server/events/ids";
import { EVENT_COLUMNS, type EventRow, serializeEvent } from "~/server/events/list";
import { log } from "~/server/observability/log";
import { type Claimed, outcomeWriter } from "./outcomes";
import { postOnce } from "./post";
import { signedHeaders } from "./signing";

/**
 * The dispatcher: claims due deliveries and posts them, at least once each, until a 2xx. Any number run at once
 * (npm start runs one beside the app: src/worker/dispatcher.ts): a claim is a short transaction that takes due
 * rows with FOR UPDATE SKIP LOCKED (two dispatchers never take the same row, and none waits on another) and moves
 * their next attempt past the attempt's timeout: a lease. The POST happens after the commit, holding nothing; its
 * result is written fenced on the attempt number the claim set (outcomes.ts), so a dispatcher that stalled past its
 * lease cannot overwrite a later attempt's result. A dispatcher that dies mid-POST leaves the row to be claimed
 * again when the lease ends: every state is in the database, nothing in memory, so deliveries survive kills and
 * restarts. Per round of claims it reads its rows in one query and writes results in batches, so its statements
 * grow with rounds, not with deliveries.
 */
const LEASE_MARGIN_MS = 5_000;
/** How long a dispatcher with room gathers due deliveries before claiming again (see runDispatcher). */
const GATHER_MS = 200;

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

/** The claimed deliveries with their events and endpoints, in one query (after the claim's commit: no locks). */
async function deliveriesOf(claimed: Claimed[]): Promise<Map<string, DeliveryRow>> {
  const rows = await queryRows<DeliveryRow>({
    sql: `SELECT d.id AS deliveryId, d.created_at AS deliveryCreatedAt, w.id AS endpointId, w.url, w.enabled,
                 w.secret, w.previous_secret AS previousSecret, w.previous_secret_until AS previousSecretUntil,
                 w.failing_since AS failingSince,
                 ${EVENT_COLUMNS.replace(/(^|,\s*)(\w+)/g, "$1ev.$2")}
            FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id
            LEFT JOIN webhook_endpoints w ON w.id = d.endpoint_id
           WHERE d.id IN (${claimed.map(() => "?").join(", ")})`,
    values: claimed.map((c) => c.id),
  });
  return new Map(rows.map((r) => [String(r.deliveryId), r]));
}

/** Nothing is sent for a deleted or disabled endpoint; a re-enabled endpoint's owner can send it again. */
async function cancel(claimed: Claimed, why: string) {
  await execute({
    sql: `UPDATE webhook_deliveries SET state = 'cancelled', last_error = ?
           WHERE id = ? AND attempts = ? AND next_attempt_at = ? AND state = 'pending'`,
    values: [why, claimed.id, claimed.attempts, claimed.leaseEnd],
  });
}

/** Posts one claimed delivery and hands what came of it to `record`. */
async function post(claimed: Claimed, row: DeliveryRow | undefined, record: ReturnType<typeof outcomeWriter>) {
  if (!row) return;
  if (row.endpointId === null || !row.enabled)
    return cancel(claimed, row.endpointId === null ? "endpoint deleted" : "endpoint disabled");
  const startedAt = new Date();
  const payload = JSON.stringify(serializeEvent(row));
  const keys = {
    secret: row.secret!,
    previousSecret: row.previousSecret,
    previousSecretUntil: row.previousSecretUntil,
  };
  const headers = signedHeaders(keys, row.id, payload, startedAt);
  const result = await postOnce(row.url!, payload, headers, env.WEBHOOK_TIMEOUT_MS);
  await record({
    claimed,
    deliveryCreatedAt: row.deliveryCreatedAt,
    endpointId: row.endpointId,
    failingSince: row.failingSince,
    startedAt,
    finishedAt: new Date(),
    result,
  });
}

const recordingFailed = (id: bigint) => (error: unknown) =>
  // Its lease ends and a later round takes it again: at least once, whatever failed here.
  log.error({ err: error, delivery: String(id) }, "webhook delivery failed to record");

/** Posts claimed deliveries side by side; each promise settles when its result is written. */
async function postAll(claimed: Claimed[], record: ReturnType<typeof outcomeWriter>): Promise<Promise<void>[]> {
  const rows = await deliveriesOf(claimed);
  return claimed.map((c) => post(c, rows.get(String(c.id)), record).catch(recordingFailed(c.id)));
}

/** Posts the given claims (a test plays a dispatcher with them). */
export async function deliver(...claimed: Claimed[]): Promise<void> {
  await Promise.all(await postAll(claimed, outcomeWriter()));
}

/** One round: claim what is due (up to `limit`) and post each; resolves when all are done. How many were claimed. */
export async function dispatchOnce(limit = env.WEBHOOK_CONCURRENCY): Promise<number> {
  const claimed = await claimDue(limit);
  if (claimed.length > 0) await deliver(...claimed);
  return claimed.length;
}

/**
 * Runs until `stopping()`, keeping up to WEBHOOK_CONCURRENCY posts in flight: a slow endpoint holds one slot,
 * not the round. Claims again at once after a full claim, after GATHER_MS after a partial one, else after
 * WEBHOOK_POLL_INTERVAL_MS.
 */
export async function runDispatcher(stopping: () => boolean): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  const record = outcomeWriter();
  while (!stopping()) {
    const room = env.WEBHOOK_CONCURRENCY - inFlight.size;
    let claimed: Claimed[] = [];
    if (room > 0) {
      try {
        claimed = await claimDue(room);
        for (const p of claimed.length > 0 ? await postAll(claimed, record) : []) {
          const posting: Promise<void> = p.finally(() => inFlight.delete(posting));
          inFlight.add(posting);
        }
      } catch (error) {
        log.error({ err: error }, "webhook claim failed"); // the database is away: try again later
      }
    }
    // Nothing due: wait a poll. Some due but less than there was room for: the next few commits are worth a
    // moment's wait, so that one claim takes them together. Full: until a slot frees.
    const wait = claimed.length === 0 ? env.WEBHOOK_POLL_INTERVAL_MS : claimed.length < room ? GATHER_MS : 0;
    if (wait > 0 || inFlight.size >= env.WEBHOOK_CONCURRENCY) {
      const pause = new Promise((r) => setTimeout(r, wait || env.WEBHOOK_POLL_INTERVAL_MS));
      await Promise.race([pause, ...(room > 0 ? [] : inFlight)]);
    }
  }
  await Promise.all(inFlight);
}
