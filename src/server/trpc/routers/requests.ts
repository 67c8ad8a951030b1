import { recordIdSchema } from "~/lib/recordId";
import { z } from "zod";
import { env } from "~/env";
import { PHASE_DISPLAY } from "~/server/requests/phaseDisplay";
import { requestDetail } from "~/server/requests/detail";
import {
  countRequests,
  listRequests,
  requestFilters,
  requestListInput,
  ROUTES,
  STATUS_FILTERS,
} from "~/server/requests/log";
import { countReuses, listReuseGroups, reuseListInput } from "~/server/requests/reuses";
import { resolveSearch } from "~/server/requests/resolve";
import { searchByPrefix } from "~/server/requests/search";
import { createTRPCRouter, protectedProcedure } from "~/server/trpc/trpc";

/**
 * Ids travel as decimal strings: React Query hashes inputs with JSON.stringify,
 * which cannot take a BigInt.
 */
const idString = recordIdSchema;

/** The request log, a request's page, prefix search and key reuses. Reads only: any signed-in staff. */
export const requestsRouter = createTRPCRouter({
  /** Newest first, filtered; `cursor` is the last row's (created_at, id). */
  list: protectedProcedure.input(requestListInput).query(({ input }) => listRequests(input)),

  /** How many records the filters match: exact up to 10 000, then "10 000+". */
  count: protectedProcedure.input(requestFilters).query(({ input }) => countRequests(input)),

  /** Keys, charge ids and customers starting with `prefix`. */
  search: protectedProcedure
    .input(
      z.object({
        prefix: z
          .string()
          .trim()
          .min(1)
          .max(64)
          .regex(/^[\x21-\x7e]+$/, "printable characters"),
      }),
    )
    .query(({ input }) => searchByPrefix(input.prefix)),

  /** What a whole id names exactly (a charge, a key, a customer): the pages to open. */
  resolve: protectedProcedure
    .input(z.object({ q: z.string().trim().min(1).max(64) }))
    .query(({ input }) => resolveSearch(input.q)),

  byId: protectedProcedure.input(z.object({ id: idString })).query(({ input }) => requestDetail(BigInt(input.id))),

  /** Reused keys grouped by key, same-client and cross-client apart. */
  reuses: protectedProcedure.input(reuseListInput).query(({ input }) => listReuseGroups(input)),

  reuseCounts: protectedProcedure.query(async () => {
    const [sameClient, crossClient] = await Promise.all([countReuses("same_client"), countReuses("cross_client")]);
    return { sameClient, crossClient };
  }),

  /** The filter controls' choices: the phases as the lifecycle module words them, routes, statuses, clients. */
  filterOptions: protectedProcedure.query(async ({ ctx }) => {
    const clients = await ctx.db.apiClient.findMany({ select: { id: true, name: true }, orderBy: { name: "asc" } });
    return {
      clients,
      routes: [...ROUTES],
      statuses: [...STATUS_FILTERS],
      phases: PHASE_DISPLAY,
      reapAfterMs: env.REAP_AFTER_MS,
    };
  }),
});
