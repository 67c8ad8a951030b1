import { z } from "zod";
import { env } from "~/env";
import type { Prisma } from "~/generated/prisma/client";
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
function page<T extends { id: bigint }>(rows: T[], limit: number) {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? String(items[items.length - 1]!.id) : null };
}

export const clientSummary = { select: { id: true, name: true } } as const;

const requestListSelect = {
  id: true,
  idempotencyKey: true,
  route: true,
  state: true,
  lockedAt: true,
  responseStatus: true,
  reapedAs: true,
  createdAt: true,
  updatedAt: true,
  apiClient: clientSummary,
  charge: { select: { id: true, status: true, amountCents: true, currency: true } },
} satisfies Prisma.IdempotentRequestSelect;

export const requestsRouter = createTRPCRouter({
  /** Finds records by idempotency key, charge id or customer id. */
  search: protectedProcedure.input(z.object({ query: z.string().trim().min(1).max(100) })).query(async ({ ctx, input }) => {
    const q = input.query;
    const requests = await ctx.db.idempotentRequest.findMany({
      where: { OR: [{ idempotencyKey: q }, { charge: { id: q } }, { charge: { customerId: q } }] },
      select: requestListSelect,
      orderBy: { id: "desc" },
      take: 50,
    });
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
      where: { ...commonWhere(input), state: "in_progress" },
      select: requestListSelect,
      orderBy: { id: "desc" },
      take: input.limit + 1,
    });
    return { ...page(rows, input.limit), reapAfterMs: env.REAP_AFTER_MS, now: new Date() };
  }),

  /** Finished by the sweeper: reaped as request_abandoned, or reconciled with the gateway. */
  abandoned: protectedProcedure.input(listInput).query(async ({ ctx, input }) => {
    const rows = await ctx.db.idempotentRequest.findMany({
      where: { ...commonWhere(input), reapedAs: { not: null } },
      select: requestListSelect,
      orderBy: { id: "desc" },
      take: input.limit + 1,
    });
    return page(rows, input.limit);
  }),

  keyReuses: protectedProcedure.input(listInput).query(async ({ ctx, input }) => {
    const rows = await ctx.db.keyReuseAttempt.findMany({ where: commonWhere(input), orderBy: { id: "desc" }, take: input.limit + 1 });
    const clients = await ctx.db.apiClient.findMany({
      where: { id: { in: [...new Set(rows.flatMap((r) => [r.apiClientId, r.ownerApiClientId]))] } },
      ...clientSummary,
    });
    const byId = new Map(clients.map((c) => [c.id, c]));
    const withClients = rows.map((r) => ({ ...r, apiClient: byId.get(r.apiClientId) ?? null, ownerApiClient: byId.get(r.ownerApiClientId) ?? null }));
    return page(withClients, input.limit);
  }),

  byId: protectedProcedure.input(z.object({ id: idString })).query(async ({ ctx, input }) => {
    const request = await ctx.db.idempotentRequest.findUnique({
      where: { id: BigInt(input.id) },
      include: { apiClient: clientSummary, charge: true },
    });
    if (!request) return null;
    const reuses = await ctx.db.keyReuseAttempt.findMany({
      where: { idempotencyKey: request.idempotencyKey, route: request.route },
      orderBy: { id: "desc" },
      take: 50,
    });
    return { request, reuses, reapAfterMs: env.REAP_AFTER_MS };
  }),

  /** For the filter controls. */
  filterOptions: protectedProcedure.query(async ({ ctx }) => {
    const clients = await ctx.db.apiClient.findMany({ ...clientSummary, orderBy: { name: "asc" } });
    const routes = await ctx.db.idempotentRequest.findMany({ distinct: ["route"], select: { route: true }, take: 50 });
    return { clients, routes: routes.map((r) => r.route) };
  }),
});
