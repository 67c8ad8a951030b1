/**
 * "Search that lands": a whole id pasted into a search box opens its record.
 * Each kind of id is one row of RESOLVERS (an exact, indexed lookup and the
 * page it opens); a new kind (refund ids, request ids) is one more row. Every
 * row is asked at once; one match opens its page, several are offered.
 */
import { db } from "~/server/db";
import { parseIdempotencyKey } from "~/server/http/idempotencyKeyHeader";
import { keyToBytes } from "~/server/idempotency/reading";

type Resolver = {
  kind: string;
  /** The id of the record `q` names exactly, or null. */
  find: (q: string) => Promise<string | null>;
  path: (id: string) => string;
};

const first = async (rows: Promise<{ id: unknown }[]>) => {
  const [row] = await rows;
  return row ? String(row.id) : null;
};

const RESOLVERS: Resolver[] = [
  {
    kind: "charge",
    find: (q) => first(db.$queryRaw`SELECT id FROM charges WHERE id = ${q}`),
    path: (id) => `/admin/charges/${encodeURIComponent(id)}`,
  },
  {
    kind: "idempotency key",
    // On any money route (charges, refunds): the unique (idempotency_key, route) index, its first column.
    find: async (q) =>
      first(db.idempotentRequest.findMany({ where: { idempotencyKey: keyToBytes(q) }, select: { id: true }, take: 1 })),
    path: (id) => `/admin/requests/${id}`,
  },
  {
    kind: "refund",
    // A refund is shown on its charge's page, with the charge's other refunds.
    find: (q) => first(db.$queryRaw`SELECT charge_id AS id FROM refunds WHERE id = ${q}`),
    path: (id) => `/admin/charges/${encodeURIComponent(id)}`,
  },
  {
    kind: "request id",
    // A Request-Id from an answer: the record it worked on, or (a 409 or a replay, which name no record) the
    // record of the key it was answered under.
    find: async (q) => {
      if (!/^req_[0-9a-f]{20}$/.test(q)) return null;
      const [event] = await db.idempotencyEvent.findMany({
        where: { apiRequestId: q },
        select: { requestId: true, idempotencyKey: true, route: true },
        orderBy: { requestId: "desc" },
        take: 1,
      });
      if (!event) return null;
      if (event.requestId !== null) return String(event.requestId);
      if (event.idempotencyKey === null) return null;
      const key = { idempotencyKey: event.idempotencyKey, route: event.route };
      return first(db.idempotentRequest.findMany({ where: key, select: { id: true }, take: 1 }));
    },
    path: (id) => `/admin/requests/${id}`,
  },
  {
    kind: "customer",
    find: (q) => first(db.$queryRaw`SELECT customer_id AS id FROM charges WHERE customer_id = ${q} LIMIT 1`),
    path: (id) => `/admin/customers/${encodeURIComponent(id)}`,
  },
];

/**
 * What a search box was given: a key pasted as the SDK sends it in its header, a quoted structured-field string
 * (`"8e03…"`, escapes and all), is the key; a quote left at either end of a partial one is dropped.
 */
export function searchTerm(q: string): string {
  const text = q.trim();
  if (!text.startsWith('"')) return text;
  const key = parseIdempotencyKey(text);
  return key.kind === "valid" ? key.key : text.replace(/^"|"$/g, "");
}

export async function resolveSearch(given: string): Promise<{ kind: string; id: string; path: string }[]> {
  const q = searchTerm(given);
  if (!q) return [];
  const found = await Promise.all(RESOLVERS.map(async (r) => ({ r, id: await r.find(q) })));
  return found.flatMap(({ r, id }) => (id === null ? [] : [{ kind: r.kind, id, path: r.path(id) }]));
}
