/**
 * "Search that lands": a whole id pasted into a search box opens its record.
 * Each kind of id is one row of RESOLVERS (an exact, indexed lookup and the
 * page it opens); a new kind (refund ids, request ids) is one more row. Every
 * row is asked at once; one match opens its page, several are offered.
 */
import { db } from "~/server/db";
import { keyToBytes } from "~/server/idempotency";

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
    kind: "customer",
    find: (q) => first(db.$queryRaw`SELECT customer_id AS id FROM charges WHERE customer_id = ${q} LIMIT 1`),
    path: (id) => `/admin/customers/${encodeURIComponent(id)}`,
  },
];

export async function resolveSearch(q: string): Promise<{ kind: string; id: string; path: string }[]> {
  const found = await Promise.all(RESOLVERS.map(async (r) => ({ r, id: await r.find(q) })));
  return found.flatMap(({ r, id }) => (id === null ? [] : [{ kind: r.kind, id, path: r.path(id) }]));
}
