/**
 * The request log: every record, newest first, filtered by phase, stored
 * status, route, client, customer and time, paged by cursor, with a bounded
 * count. Each filter has an index that starts with its column and ends with
 * created_at (InnoDB appends the id), so a filtered page is read in order
 * and stops after `limit` rows; the phases a record only passes through are
 * found by their own index (lifecycle.ts says which). The list of indexes the
 * optimiser may use is given for each query (USE INDEX), so that it picks the
 * most selective filter by its estimates instead of walking the whole table by
 * time. Phases are decoded and worded by the lifecycle module, never here.
 */
import { z } from "zod";
import { CHARGES_ROUTE } from "~/server/charges/submitCharge";
import { db } from "~/server/db";
import {
  decodeRecord, PHASE_DISPLAY, phaseCondition, phaseDisplay, recordColumns, type PhaseFilter, type RecordRow,
} from "~/server/idempotency";
import { before, bounded, cond, COUNT_CAP, cursorOf, cursorSchema, where, type Condition } from "./sql";

/** The routes the API has: the route filter's choices, without reading 5M rows to find them. */
export const ROUTES = [CHARGES_ROUTE] as const;

export const PHASE_FILTERS = ["in_progress", ...Object.keys(PHASE_DISPLAY), "complete"] as [PhaseFilter, ...PhaseFilter[]];

/** Stored answers are 201, 402 or 500 (request_abandoned); "none" is a record with no answer yet. */
export const STATUS_FILTERS = ["201", "402", "500", "none"] as const;

export const requestFilters = z.object({
  phase: z.enum(PHASE_FILTERS).optional(),
  status: z.enum(STATUS_FILTERS).optional(),
  route: z.enum(ROUTES).optional(),
  apiClientId: z.number().int().positive().optional(),
  customerId: z.string().trim().min(1).max(64).optional(),
  since: z.date().optional(),
  until: z.date().optional(),
});
export type RequestFilters = z.infer<typeof requestFilters>;

export const requestListInput = requestFilters.extend({
  cursor: cursorSchema.nullish(),
  limit: z.number().int().min(1).max(100).default(25),
});

/** The conditions of the filters, and the indexes that can find their rows. */
function filtersToSql(f: RequestFilters, now: Date): { conditions: Condition[]; indexes: string[] } {
  const conditions: Condition[] = [];
  const indexes: string[] = [];
  if (f.phase) {
    const phase = phaseCondition(f.phase, now);
    conditions.push(phase);
    if (phase.index) indexes.push(phase.index);
  }
  if (f.status) {
    conditions.push(f.status === "none" ? cond("response_status IS NULL") : cond("response_status = ?", Number(f.status)));
    indexes.push("idempotent_requests_status_idx");
  }
  if (f.route) conditions.push(cond("route = ?", f.route));
  if (f.apiClientId) {
    conditions.push(cond("api_client_id = ?", f.apiClientId));
    indexes.push("idempotent_requests_client_created_idx");
  }
  if (f.customerId) {
    conditions.push(cond("customer_id = ?", f.customerId));
    indexes.push("idempotent_requests_customer_idx");
  }
  if (f.since) conditions.push(cond("created_at >= ?", f.since));
  if (f.until) conditions.push(cond("created_at <= ?", f.until));
  // No selective filter: walk by time (the route has a handful of values and is never selective).
  if (indexes.length === 0) indexes.push("idempotent_requests_created_idx");
  return { conditions, indexes };
}

type Row = RecordRow & { customerId: string | null };

/** A page of the log: records as the dashboard shows them (see summarise), newest first. */
export async function listRequests(input: z.infer<typeof requestListInput>) {
  const now = new Date();
  const { conditions, indexes } = filtersToSql(input, now);
  const w = where([...conditions, ...before(input.cursor, BigInt)]);
  const rows = await db.$queryRawUnsafe<Row[]>(
    `SELECT ${recordColumns()}, customer_id AS customerId FROM idempotent_requests USE INDEX (${indexes.join(", ")})
      ${w.sql} ORDER BY created_at DESC, id DESC LIMIT ?`,
    ...w.values,
    input.limit + 1,
  );
  const page = rows.slice(0, input.limit);
  const items = await summarise(page, now);
  return { items, nextCursor: rows.length > input.limit ? cursorOf(page.at(-1)!) : null, now };
}

/** How many records match, exact up to COUNT_CAP. */
export async function countRequests(filters: RequestFilters) {
  const { conditions, indexes } = filtersToSql(filters, new Date());
  const w = where(conditions);
  const [row] = await db.$queryRawUnsafe<{ n: bigint }[]>(
    `SELECT COUNT(*) AS n FROM (SELECT 1 FROM idempotent_requests USE INDEX (${indexes.join(", ")}) ${w.sql} LIMIT ?) AS page`,
    ...w.values,
    COUNT_CAP + 1,
  );
  return bounded(row?.n ?? 0);
}

/**
 * Records as the dashboard shows them: the phase decoded and worded by the
 * lifecycle module, the client's name, the charge if one was made. Two
 * indexed reads for the whole page (clients by id, charges by record id).
 */
export async function summarise(rows: Row[], now: Date) {
  const ids = rows.map((r) => r.id);
  const clientIds = [...new Set(rows.map((r) => r.apiClientId))];
  const [clients, charges] = await Promise.all([
    clientIds.length ? db.apiClient.findMany({ where: { id: { in: clientIds } }, select: { id: true, name: true } }) : [],
    ids.length
      ? db.charge.findMany({
          where: { idempotentRequestId: { in: ids } },
          select: { id: true, status: true, amountCents: true, currency: true, idempotentRequestId: true },
        })
      : [],
  ]);
  const clientOf = new Map(clients.map((c) => [c.id, c]));
  const chargeOf = new Map(charges.map((c) => [String(c.idempotentRequestId), c]));
  return rows.map((row) => {
    const record = decodeRecord({ ...row, attempt: Number(row.attempt) }, now);
    const phase = record.phase;
    const charge = chargeOf.get(String(record.id));
    return {
      id: String(record.id),
      idempotencyKey: record.idempotencyKey,
      route: record.route,
      apiClient: clientOf.get(record.apiClientId) ?? { id: record.apiClientId, name: `client ${record.apiClientId}` },
      customerId: row.customerId,
      attempt: record.attempt,
      phase: phaseDisplay(phase),
      leaseExpiresAt: phase.name === "held" || phase.name === "lease_expired" ? phase.leaseExpiresAt : null,
      responseStatus: phase.name === "complete" ? phase.response.status : null,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
      expiresAt: record.expiresAt,
      charge: charge
        ? { id: charge.id, status: charge.status, amountCents: charge.amountCents, currency: charge.currency }
        : null,
    };
  });
}

export type RequestSummary = Awaited<ReturnType<typeof summarise>>[number];
