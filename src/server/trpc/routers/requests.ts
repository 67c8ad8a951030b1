import { z } from "zod";
import { env } from "~/env";
import type { Prisma } from "~/generated/prisma/client";
import { decodeRecord, keyFromBytes, keyToBytes, phaseDisplay, phaseWhere } from "~/server/idempotency";
import { createTRPCRouter, protectedProcedure } from "~/server/trpc/trpc";

/**
 * Ids travel as decimal strings: React Query hashes inputs with JSON.stringify,
 * which cannot take a BigInt.
 */
const idString = z.string().regex(/^\d{1,19}$/, "must be a record id");

/** Filters shared by every list; `cursor` is the id of the last row already shown. */
const listInput = z.object({
  route: z.string().max(64).optional(),
  apiClientId: z.number().int().positive().optional(),
  since: z.date().optional(),
  until: z.date().optional(),
  cursor: idString.nullish(),
  limit: z.number().int().min(1).max(100).default(25),
});
type ListInput = z.infer<typeof listInput>;

function commonWhere(input: ListInput) {
  return {
    ...(input.route ? { route: input.route } : {}),
    ...(input.apiClientId ? { apiClientId: input.apiClientId } : {}),
    ...(input.since || input.until ? { createdAt: { gte: input.since, lte: input.until } } : {}),
    ...(input.cursor ? { id: { lt: BigInt(input.cursor) } } : {}),
  };
}

/** Takes one row more than asked, to know whether there is a next page. */
function page<T extends { id: bigint | string }>(rows: T[], limit: number) {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? String(items[items.length - 1]!.id) : null };
}

export const clientSummary = { select: { id: true, name: true } } as const;

const requestListInclude = {
  apiClient: clientSummary,
  charge: { select: { id: true, status: true, amountCents: true, currency: true } },
} satisfies Prisma.IdempotentRequestInclude;

type RecordRow = Prisma.IdempotentRequestGetPayload<{ include: typeof requestListInclude }>;

/**
 * A record as the dashboard shows it: its phase decoded and worded by the
 * lifecycle module (the only place that reads the state columns), never the
 * columns themselves.
 */
function summary(row: RecordRow, now: Date) {
  const record = decodeRecord(row, now);
  const phase = record.phase;
  return {
    id: String(record.id),
    idempotencyKey: record.idempotencyKey,
    route: record.route,
    apiClient: row.apiClient,
    attempt: record.attempt,
    phase: phaseDisplay(phase),
    leaseExpiresAt: phase.name === "held" || phase.name === "lease_expired" ? phase.leaseExpiresAt : null,
    responseStatus: phase.name === "complete" ? phase.response.status : null,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    expiresAt: record.expiresAt,
    charge: row.charge,
  };
}

export const requestsRouter = createTRPCRouter({
  /** Finds records by idempotency key, charge id or customer id. */
  search: protectedProcedure.input(z.object({ query: z.string().trim().min(1).max(100) })).query(async ({ ctx, input }) => {
    const q = input.query;
    const rows = await ctx.db.idempotentRequest.findMany({
      where: { OR: [{ idempotencyKey: keyToBytes(q) }, { charge: { id: q } }, { charge: { customerId: q } }] },
      include: requestListInclude,
      orderBy: { id: "desc" },
      take: 50,
    });
    const now = new Date();
    const requests = rows.map((row) => summary(row, now));
    const charges = await ctx.db.charge.findMany({
      where: { OR: [{ id: q }, { customerId: q }, { gatewayChargeId: q }] },
      include: { apiClient: clientSummary },
      orderBy: { createdAt: "desc" },
      take: 50,
    });
    return { requests, charges };
  }),

  inFlight: protectedProcedure.input(listInput).query(async ({ ctx, input }) => {
    const rows = await ctx.db.idempotentRequest.findMany({
      where: { ...commonWhere(input), ...phaseWhere.in_progress },
      include: requestListInclude,
      orderBy: { id: "desc" },
      take: input.limit + 1,
    });
    const now = new Date();
    return { ...page(rows.map((row) => summary(row, now)), input.limit), reapAfterMs: env.REAP_AFTER_MS, now };
  }),

  /** Finished by the sweeper: reaped as request_abandoned, or reconciled with the gateway. */
  abandoned: protectedProcedure.input(listInput).query(async ({ ctx, input }) => {
    const rows = await ctx.db.idempotentRequest.findMany({
      where: { ...commonWhere(input), ...phaseWhere.finished_by_sweeper },
      include: requestListInclude,
      orderBy: { id: "desc" },
      take: input.limit + 1,
    });
    const now = new Date();
    return page(rows.map((row) => summary(row, now)), input.limit);
  }),

  keyReuses: protectedProcedure.input(listInput).query(async ({ ctx, input }) => {
    const rows = await ctx.db.keyReuseAttempt.findMany({ where: commonWhere(input), orderBy: { id: "desc" }, take: input.limit + 1 });
    const clients = await ctx.db.apiClient.findMany({
      where: { id: { in: [...new Set(rows.flatMap((r) => [r.apiClientId, r.ownerApiClientId]))] } },
      ...clientSummary,
    });
    const byId = new Map(clients.map((c) => [c.id, c]));
    const withClients = rows.map((r) => ({
      ...r,
      idempotencyKey: keyFromBytes(r.idempotencyKey),
      apiClient: byId.get(r.apiClientId) ?? null,
      ownerApiClient: byId.get(r.ownerApiClientId) ?? null,
    }));
    return page(withClients, input.limit);
  }),

  byId: protectedProcedure.input(z.object({ id: idString })).query(async ({ ctx, input }) => {
    const row = await ctx.db.idempotentRequest.findUnique({
      where: { id: BigInt(input.id) },
      include: { apiClient: clientSummary, charge: true },
    });
    if (!row) return null;
    const request = { ...summary(row, new Date()), requestHash: row.requestHash, responseBody: row.responseBody, charge: row.charge };
    const reuses = row.idempotencyKey
      ? await ctx.db.keyReuseAttempt.findMany({
          where: { idempotencyKey: row.idempotencyKey, route: row.route },
          orderBy: { id: "desc" },
          take: 50,
        })
      : [];
    return { request, reuses, reapAfterMs: env.REAP_AFTER_MS };
  }),

  /** For the filter controls. */
  filterOptions: protectedProcedure.query(async ({ ctx }) => {
    const clients = await ctx.db.apiClient.findMany({ ...clientSummary, orderBy: { name: "asc" } });
    const routes = await ctx.db.idempotentRequest.findMany({ distinct: ["route"], select: { route: true }, take: 50 });
    return { clients, routes: routes.map((r) => r.route) };
  }),
});
