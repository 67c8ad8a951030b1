/**
 * The request log: every record, newest first, filtered by phase, stored
 * status, route, client, customer, why it was abandoned and time, paged by cursor, with a bounded
 * count. The statements, and which index serves which filter, are
 * recordList.ts; phases are decoded by the lifecycle and worded by
 * phaseDisplay.ts, never here.
 */
import { z } from "zod";
import { MONEY_ROUTES } from "~/server/moneyRoutes";
import { db } from "~/server/db";
import type { PhaseFilter } from "~/server/idempotency/reading";
import { PHASE_DISPLAY, phaseDisplay } from "./phaseDisplay";
import { countRecords, listRecords, type ListedRecord } from "./recordList";
import { bounded, COUNT_CAP, cursorOf, cursorSchema, parseCursor } from "./sql";

/** The routes the API has: the route filter's choices, without reading 5M rows to find them. */
export const ROUTES = MONEY_ROUTES as [string, ...string[]];

export const PHASE_FILTERS = ["in_progress", ...Object.keys(PHASE_DISPLAY), "complete"] as [
  PhaseFilter,
  ...PhaseFilter[],
];

/** Stored answers are 201, 402 or 500 (request_abandoned); "none" is a record with no answer yet. */
export const STATUS_FILTERS = ["201", "402", "500", "none"] as const;

export const requestFilters = z.object({
  phase: z.enum(PHASE_FILTERS).optional(),
  status: z.enum(STATUS_FILTERS).optional(),
  route: z.enum(ROUTES).optional(),
  apiClientId: z.number().int().positive().optional(),
  customerId: z.string().trim().min(1).max(64).optional(),
  /** Why abandoned records were: no trace at the gateway, or refused by it. */
  abandoned: z.enum(["no_trace", "refused"]).optional(),
  since: z.date().optional(),
  until: z.date().optional(),
});
export type RequestFilters = z.infer<typeof requestFilters>;

export const requestListInput = requestFilters.extend({
  cursor: cursorSchema.nullish(),
  limit: z.number().int().min(1).max(100).default(25),
});

/** A page of the log: records as the dashboard shows them (see summarise), newest first. */
export async function listRequests({ cursor, limit, ...filters }: z.infer<typeof requestListInput>) {
  const now = new Date();
  const c = cursor ? parseCursor(cursor) : null;
  const before = c ? { createdAt: c.createdAt, id: BigInt(c.id) } : null;
  const records = await listRecords(filters, { before, limit: limit + 1 }, now);
  const page = records.slice(0, limit);
  return { items: await summarise(page), nextCursor: records.length > limit ? cursorOf(page.at(-1)!) : null, now };
}

/** How many records match, exact up to COUNT_CAP; null when the count would take too long (see countRecords). */
export async function countRequests(filters: RequestFilters) {
  const n = await countRecords(filters, COUNT_CAP);
  return n === null ? null : bounded(n);
}

/**
 * Records as the dashboard shows them: the phase decoded and worded by the
 * lifecycle module, the client's name, the charge if one was made. Two
 * indexed reads for the whole page (clients by id, charges by record id).
 */
export async function summarise(records: ListedRecord[]) {
  const ids = records.map((r) => r.id);
  const clientIds = [...new Set(records.map((r) => r.apiClientId))];
  const [clients, charges] = await Promise.all([
    clientIds.length
      ? db.apiClient.findMany({ where: { id: { in: clientIds } }, select: { id: true, name: true } })
      : [],
    ids.length
      ? db.charge.findMany({
          where: { idempotentRequestId: { in: ids } },
          select: { id: true, status: true, amountCents: true, currency: true, idempotentRequestId: true },
        })
      : [],
  ]);
  const clientOf = new Map(clients.map((c) => [c.id, c]));
  const chargeOf = new Map(charges.map((c) => [String(c.idempotentRequestId), c]));
  return records.map((record) => {
    const phase = record.phase;
    const charge = chargeOf.get(String(record.id));
    return {
      id: String(record.id),
      idempotencyKey: record.idempotencyKey,
      route: record.route,
      apiClient: clientOf.get(record.apiClientId) ?? { id: record.apiClientId, name: `client ${record.apiClientId}` },
      customerId: record.customerId,
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
