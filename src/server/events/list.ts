import { queryRows } from "~/server/db";
import { badParameter, createdConditions, listBody, pageOf, parseListQuery } from "~/server/http/listQuery";
import { EVENT_TYPES } from "./types";

export type EventRow = {
  seq: bigint;
  id: string;
  type: string;
  data: string;
  chargeId: string | null;
  requestId: bigint | null;
  idempotencyKey: Buffer | null;
  createdAt: Date;
};

export const EVENT_COLUMNS = `seq, id, type, data, charge_id AS chargeId, request_id AS requestId,
  idempotency_key AS idempotencyKey, created_at AS createdAt`;

/** An event as the API shows it (GET /api/events, and the body of every webhook delivery). */
export function serializeEvent(row: EventRow) {
  return {
    id: row.id,
    object: "event",
    type: row.type,
    /** Increases with each event of the client (gaps are normal). */
    sequence: Number(row.seq),
    created_at: row.createdAt.toISOString(),
    data: { object: JSON.parse(row.data) as unknown },
    request: {
      id: row.requestId === null ? null : String(row.requestId),
      idempotency_key: row.idempotencyKey === null ? null : Buffer.from(row.idempotencyKey).toString("utf8"),
    },
  };
}

/**
 * `type`: one type, or a family with a trailing `*` (`charge.*`), as Stripe's filter.
 */
function typeCondition(type: string | null): { sql: string; value: string } | null {
  if (type === null) return null;
  if (type.endsWith(".*")) {
    const family = type.slice(0, -1);
    if (!EVENT_TYPES.some((t) => t.startsWith(family))) throw badParameter("type", "names no event type");
    return { sql: "type LIKE ?", value: `${family}%` };
  }
  if (!(EVENT_TYPES as readonly string[]).includes(type)) throw badParameter("type", "names no event type");
  return { sql: "type = ?", value: type };
}

/** GET /api/events: a client's events, newest first by sequence, paged by cursor (an event id of its own). */
export async function listEvents(apiClientId: number, search: URLSearchParams): Promise<string> {
  const query = parseListQuery(search);
  const conditions = ["api_client_id = ?"];
  const values: unknown[] = [apiClientId];
  const type = typeCondition(search.get("type"));
  if (type) {
    conditions.push(type.sql);
    values.push(type.value);
  }
  const created = createdConditions("created_at", query.created);
  conditions.push(...created.conditions);
  values.push(...created.values);
  const cursorId = query.startingAfter ?? query.endingBefore;
  const older = query.endingBefore === null;
  if (cursorId !== null) {
    const [cursor] = await queryRows<{ seq: bigint }>({
      sql: "SELECT seq FROM events WHERE id = ? AND api_client_id = ?",
      values: [cursorId, apiClientId],
    });
    if (!cursor) throw badParameter(older ? "starting_after" : "ending_before", "names no event of yours");
    conditions.push(older ? "seq < ?" : "seq > ?");
    values.push(cursor.seq);
  }
  const rows = await queryRows<EventRow>({
    sql: `SELECT ${EVENT_COLUMNS} FROM events WHERE ${conditions.join(" AND ")}
          ORDER BY seq ${older ? "DESC" : "ASC"} LIMIT ${query.limit + 1}`,
    values,
  });
  const page = pageOf(rows, query);
  return listBody("/api/events", page.rows.map(serializeEvent), page.hasMore);
}

/** A client's event by id (GET /api/events/{id}), or null (another client's is as missing). */
export async function findEvent(apiClientId: number, id: string) {
  const [row] = await queryRows<EventRow>({
    sql: `SELECT ${EVENT_COLUMNS} FROM events WHERE id = ? AND api_client_id = ?`,
    values: [id, apiClientId],
  });
  return row ? serializeEvent(row) : null;
}
