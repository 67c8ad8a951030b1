/**
 * The events of a key for its timeline on the request's page (the dashboard's read model): what the idempotency
 * module noted of it (idempotency/events.ts writes them), read from idempotency_events.
 */
import type { IdempotencyEventKind } from "~/generated/prisma/client";
import { db } from "~/server/db";
import { keyToBytes } from "~/server/idempotency/reading";

export type EventKind = IdempotencyEventKind;

export type TimelineEvent = {
  id: string;
  at: Date;
  kind: EventKind;
  requestId: string | null;
  apiClientId: number;
  attempt: number | null;
  detail: string | null;
  instance: string;
  /** The Request-Id of the API request the event happened in. */
  apiRequestId: string | null;
  /** An `answered` event's answer (its code is the detail). */
  answer: { status: number; latencyMs: number | null; clientGone: boolean } | null;
};

/** At most this many events of one key are listed (a client polling a long charge makes many 409s)... */
const TIMELINE_LIMIT = 200;
/** ...and this much clock difference between instances is allowed before the claim. */
const CLOCK_SKEW_MS = 5_000;

/**
 * The events of one record: those of its key on its route since it was
 * claimed (a key can name an earlier, expired operation), or, for a keyless
 * request, those naming the record. Oldest first; the newest TIMELINE_LIMIT.
 */
export async function eventsOf(record: {
  id: bigint;
  idempotencyKey: string | null;
  route: string;
  createdAt: Date;
}): Promise<{ events: TimelineEvent[]; truncated: boolean }> {
  const rows = await db.idempotencyEvent.findMany({
    where:
      record.idempotencyKey === null
        ? { requestId: record.id }
        : {
            idempotencyKey: keyToBytes(record.idempotencyKey),
            route: record.route,
            createdAt: { gte: new Date(record.createdAt.getTime() - CLOCK_SKEW_MS) },
          },
    // Events of one process noted in the same millisecond keep the order they were noted in (their ids').
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: TIMELINE_LIMIT + 1,
  });
  const events = rows
    .slice(0, TIMELINE_LIMIT)
    .reverse()
    .map((row) => ({
      id: String(row.id),
      at: row.createdAt,
      kind: row.kind,
      requestId: row.requestId === null ? null : String(row.requestId),
      apiClientId: row.apiClientId,
      attempt: row.attempt,
      detail: row.detail,
      instance: row.instance,
      apiRequestId: row.apiRequestId,
      answer:
        row.status === null
          ? null
          : { status: row.status, latencyMs: row.latencyMs, clientGone: row.clientGone ?? false },
    }));
  return { events, truncated: rows.length > TIMELINE_LIMIT };
}

/** How many of each kind of event a key had (bounded: a count past `cap` reads as cap). */
export async function eventCounts(
  record: { idempotencyKey: string | null; route: string; createdAt: Date },
  cap = 10_000,
) {
  if (record.idempotencyKey === null) return {};
  const rows = await db.$queryRaw<{ kind: EventKind; n: bigint | number }[]>`
    SELECT kind, COUNT(*) AS n FROM (
      SELECT kind FROM idempotency_events
       WHERE idempotency_key = ${Buffer.from(record.idempotencyKey, "latin1")} AND route = ${record.route}
         AND created_at >= ${new Date(record.createdAt.getTime() - CLOCK_SKEW_MS)}
       LIMIT ${cap}) AS e
    GROUP BY kind`;
  return Object.fromEntries(rows.map((r) => [r.kind, Number(r.n)])) as Partial<Record<EventKind, number>>;
}
