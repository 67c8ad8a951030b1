/**
 * Key reuses (422 idempotency_key_reused), grouped by key: how often each key
 * was reused and a link to the record that owns it. Same-client reuses (a
 * changed request under an old key) and cross-client attempts (another
 * client's key: a collision, or guessing) are listed apart. Pages walk
 * (cross_client, created_at); the counts per key come from the key's index.
 */
import { z } from "zod";
import { db } from "~/server/db";
import { keyFromBytes, keyToBytes } from "~/server/idempotency/reading";
import { before, bounded, cond, COUNT_CAP, cursorOf, cursorSchema, where } from "./sql";

export const reuseListInput = z.object({
  kind: z.enum(["same_client", "cross_client"]).default("same_client"),
  cursor: cursorSchema.nullish(),
  limit: z.number().int().min(1).max(100).default(50),
});

type ReuseRow = {
  id: bigint;
  idempotencyKey: Uint8Array;
  route: string;
  apiClientId: number;
  ownerApiClientId: number;
  createdAt: Date;
};

export async function listReuseGroups(input: z.infer<typeof reuseListInput>) {
  const cross = input.kind === "cross_client";
  const w = where([cond("cross_client = ?", cross), ...before(input.cursor, BigInt)]);
  const rows = await db.$queryRawUnsafe<ReuseRow[]>(
    `SELECT id, idempotency_key AS idempotencyKey, route, api_client_id AS apiClientId,
            owner_api_client_id AS ownerApiClientId, created_at AS createdAt
       FROM idempotency_key_reuses USE INDEX (idempotency_key_reuses_kind_idx)
      ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?`,
    ...w.values,
    input.limit + 1,
  );
  const shown = rows.slice(0, input.limit);
  const groups = new Map<string, { key: string; route: string; last: ReuseRow; clients: Set<number>; owner: number }>();
  for (const row of shown) {
    const key = keyFromBytes(row.idempotencyKey);
    const id = `${row.route}\n${key}`;
    const group = groups.get(id) ?? {
      key,
      route: row.route,
      last: row,
      clients: new Set(),
      owner: row.ownerApiClientId,
    };
    group.clients.add(row.apiClientId);
    groups.set(id, group);
  }
  const keys = [...new Set([...groups.values()].map((g) => g.key))].map((k) => Buffer.from(keyToBytes(k)));
  const [totals, owners] = keys.length
    ? await Promise.all([
        db.$queryRawUnsafe<{ idempotencyKey: Uint8Array; route: string; n: bigint }[]>(
          `SELECT idempotency_key AS idempotencyKey, route, COUNT(*) AS n FROM idempotency_key_reuses
            WHERE idempotency_key IN (${keys.map(() => "?").join(", ")}) AND cross_client = ?
            GROUP BY idempotency_key, route`,
          ...keys,
          cross,
        ),
        db.idempotentRequest.findMany({
          where: { idempotencyKey: { in: keys.map((k) => new Uint8Array(k)) } },
          select: { id: true, idempotencyKey: true, route: true, createdAt: true },
        }),
      ])
    : [[], []];
  const totalOf = new Map(totals.map((t) => [`${t.route}\n${keyFromBytes(t.idempotencyKey)}`, Number(t.n)]));
  const ownerOf = new Map(owners.map((o) => [`${o.route}\n${keyFromBytes(o.idempotencyKey!)}`, o]));
  const clientIds = [...new Set([...groups.values()].flatMap((g) => [g.owner, ...g.clients]))];
  const clients = clientIds.length
    ? await db.apiClient.findMany({ where: { id: { in: clientIds } }, select: { id: true, name: true } })
    : [];
  const clientOf = new Map(clients.map((c) => [c.id, c]));
  const name = (id: number) => clientOf.get(id) ?? { id, name: `client ${id}` };
  return {
    groups: [...groups.entries()].map(([id, g]) => ({
      idempotencyKey: g.key,
      route: g.route,
      attempts: totalOf.get(id) ?? 1,
      lastAt: g.last.createdAt,
      owner: name(g.owner),
      attemptedBy: [...g.clients].map(name),
      // The record that owns the key now (gone once it expired and was pruned).
      original: ownerOf.has(id) ? { id: String(ownerOf.get(id)!.id), createdAt: ownerOf.get(id)!.createdAt } : null,
    })),
    nextCursor: rows.length > input.limit ? cursorOf(shown.at(-1)!) : null,
  };
}

export async function countReuses(kind: "same_client" | "cross_client") {
  const [row] = await db.$queryRawUnsafe<{ n: bigint }[]>(
    `SELECT COUNT(*) AS n FROM (SELECT 1 FROM idempotency_key_reuses WHERE cross_client = ? LIMIT ?) AS page`,
    kind === "cross_client",
    COUNT_CAP + 1,
  );
  return bounded(row?.n ?? 0);
}
