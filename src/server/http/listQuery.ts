import { ApiError } from "./apiError";

/**
 * Stripe's list parameters, the same on every list (GET /api/events, /api/charges, /api/refunds): newest first,
 * `limit` (1-100, default 10), `starting_after` (the page after this object: older ones) or `ending_before` (the
 * page before it: newer ones), and `created[gte|gt|lte|lt]` (ISO 8601 or Unix seconds). A cursor names an object
 * of the caller's own; anything else is refused (400), never a page of another client's.
 */
export type ListQuery = {
  limit: number;
  startingAfter: string | null;
  endingBefore: string | null;
  created: { gte?: Date; gt?: Date; lte?: Date; lt?: Date };
};

export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 10;

const BOUNDS = ["gte", "gt", "lte", "lt"] as const;

function parseInstant(value: string): Date | null {
  const at = /^\d{1,12}$/.test(value) ? new Date(Number(value) * 1000) : new Date(value);
  return Number.isNaN(at.getTime()) ? null : at;
}

/** A 400 invalid_request naming the parameter, the format every other field error has. */
export const badParameter = (name: string, message: string) =>
  new ApiError("invalid_request", `Invalid query parameter ${name}.`, { fields: { [name]: [message] } });

export function parseListQuery(query: URLSearchParams): ListQuery {
  const limitText = query.get("limit");
  const limit = limitText === null ? DEFAULT_LIMIT : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw badParameter("limit", `must be a whole number from 1 to ${MAX_LIMIT}`);
  const startingAfter = query.get("starting_after");
  const endingBefore = query.get("ending_before");
  if (startingAfter !== null && endingBefore !== null)
    throw badParameter("ending_before", "cannot be sent with starting_after");
  const created: ListQuery["created"] = {};
  for (const bound of BOUNDS) {
    const text = query.get(`created[${bound}]`);
    if (text === null) continue;
    const at = parseInstant(text);
    if (!at) throw badParameter(`created[${bound}]`, "must be an ISO 8601 time or Unix seconds");
    created[bound] = at;
  }
  return { limit, startingAfter, endingBefore, created };
}

/** The SQL of the `created` bounds on a column, with their values. */
export function createdConditions(column: string, created: ListQuery["created"]) {
  const operators = { gte: ">=", gt: ">", lte: "<=", lt: "<" } as const;
  const conditions: string[] = [];
  const values: unknown[] = [];
  for (const bound of BOUNDS) {
    const at = created[bound];
    if (!at) continue;
    conditions.push(`${column} ${operators[bound]} ?`);
    values.push(at);
  }
  return { conditions, values };
}

/**
 * A page read with one row more than asked for, in the direction of the cursor, as the list shows it: newest
 * first, and whether there is more beyond it in that direction (Stripe's `has_more`).
 */
export function pageOf<Row>(rows: Row[], query: ListQuery): { rows: Row[]; hasMore: boolean } {
  const hasMore = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  return { rows: query.endingBefore !== null ? page.reverse() : page, hasMore };
}

/** Stripe's list object. `url` is the list's path, for a client that pages by following it. */
export function listBody(url: string, data: unknown[], hasMore: boolean): string {
  return JSON.stringify({ object: "list", data, has_more: hasMore, url });
}
