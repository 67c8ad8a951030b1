import type { Statement } from "~/server/db";
import { newEventId, utcDatetime } from "./ids";
import type { EventDraft } from "./types";

/**
 * The statements that write an event in the caller's transaction (a transactional outbox): one delivery per
 * enabled endpoint of the client subscribed to its type (at most one per pair: the unique index), then the
 * event. Nothing is sent from here: the dispatcher (src/server/webhooks) claims the deliveries once they are
 * committed, so a rolled-back change leaves neither an event nor a delivery, and a committed one leaves both.
 *
 * The order is deliberate: `atomically` checks the row count of each write's last statement, and the event's
 * INSERT always makes one row, while a client may have no endpoint (a fan-out of none).
 *
 * No per-client counter: an event's `seq` is the table's AUTO_INCREMENT, increasing for each client's events
 * without a row that every completion of a client would queue on until the one before it committed.
 */
export function eventStatements(draft: EventDraft, at = new Date()): { id: string; statements: Statement[] } {
  const id = newEventId();
  const created = utcDatetime(at);
  const fanOut: Statement = {
    sql: `INSERT INTO webhook_deliveries (event_id, endpoint_id, api_client_id, next_attempt_at, created_at)
          SELECT ?, e.id, e.api_client_id, ?, ? FROM webhook_endpoints e
           WHERE e.api_client_id = ? AND e.enabled AND (e.event_types = '*' OR FIND_IN_SET(?, e.event_types) > 0)`,
    values: [id, created, created, draft.apiClientId, draft.type],
  };
  const insert: Statement = {
    sql: `INSERT INTO events (id, api_client_id, type, data, charge_id, object_id, idempotency_key, request_id,
                              created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    values: [
      id,
      draft.apiClientId,
      draft.type,
      JSON.stringify(draft.object),
      draft.chargeId,
      typeof draft.object.id === "string" ? draft.object.id : null,
      draft.idempotencyKey === null ? null : Buffer.from(draft.idempotencyKey, "utf8"),
      draft.requestId,
      created,
    ],
  };
  return { id, statements: [fanOut, insert] };
}

/** The same as one statement, for a compound transaction (db/statements.ts, atomically): the event's row last. */
export function eventWrite(draft: EventDraft, at = new Date()): Statement {
  const { statements } = eventStatements(draft, at);
  return { sql: statements.map((s) => s.sql).join(";\n"), values: statements.flatMap((s) => s.values) };
}

/** Runs the event's statements in a Prisma transaction (the ledger's repairs write theirs so). */
export async function writeEventInPrisma(
  tx: { $executeRawUnsafe: (sql: string, ...values: unknown[]) => Promise<number> },
  draft: EventDraft,
): Promise<string> {
  const { id, statements } = eventStatements(draft);
  for (const { sql, values } of statements) await tx.$executeRawUnsafe(sql, ...values);
  return id;
}
