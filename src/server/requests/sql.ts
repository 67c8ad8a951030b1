/**
 * Small helpers for the dashboard's hand-written reads: a condition list that
 * keeps each `?` beside its value, the (created_at, id) cursor every list
 * pages by, and bounded counts.
 */
import { z } from "zod";

export type Condition = { sql: string; values: unknown[] };

export const cond = (sql: string, ...values: unknown[]): Condition => ({ sql, values });

export function where(conditions: Condition[]): Condition {
  if (conditions.length === 0) return { sql: "", values: [] };
  return {
    sql: `WHERE ${conditions.map((c) => `(${c.sql})`).join(" AND ")}`,
    values: conditions.flatMap((c) => c.values),
  };
}

/**
 * Lists go newest first by (created_at, id) and page with the last row's pair,
 * never with OFFSET: a deep page costs what the first does. The cursor is
 * opaque to clients: `<ISO time>_<id>`.
 */
export const cursorSchema = z
  .string()
  .regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z_[\w-]{1,40}$/, "must be a list cursor");

export const cursorOf = (row: { createdAt: Date; id: bigint | string }) => `${row.createdAt.toISOString()}_${row.id}`;

export function parseCursor(cursor: string): { createdAt: Date; id: string } {
  const at = cursor.indexOf("_");
  return { createdAt: new Date(cursor.slice(0, at)), id: cursor.slice(at + 1) };
}

/**
 * Rows older than the cursor in (time DESC, id DESC) order. MariaDB's range
 * optimiser reads this as time <= ? on an index ending in the time column.
 * `toId` types the id as its column is (a number for records, a string for charges).
 */
export function before(
  cursor: string | null | undefined,
  toId: (id: string) => unknown,
  time = "created_at",
  id = "id",
): Condition[] {
  if (!cursor) return [];
  const c = parseCursor(cursor);
  return [cond(`${time} < ? OR (${time} = ? AND ${id} < ?)`, c.createdAt, c.createdAt, toId(c.id))];
}

/** Counts shown in the UI are exact up to this and "10 000+" past it: never a COUNT(*) over millions of rows. */
export const COUNT_CAP = 10_000;
export type BoundedCount = { count: number; capped: boolean };
export const bounded = (n: bigint | number): BoundedCount => ({
  count: Math.min(Number(n), COUNT_CAP),
  capped: Number(n) > COUNT_CAP,
});

/** LIKE 'prefix%' with the prefix's own wildcards escaped. */
export const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
