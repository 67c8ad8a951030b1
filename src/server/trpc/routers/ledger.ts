import { z } from "zod";
import { recordIdSchema } from "~/lib/recordId";
import { MISMATCH_LABELS, resolveMismatch } from "~/server/ledger/mismatches";
import { createTRPCRouter, engineerProcedure, protectedProcedure } from "~/server/trpc/trpc";

/** The ledger reconciliation's results: its last runs and what it could not prove right. */
export const ledgerRouter = createTRPCRouter({
  status: protectedProcedure.query(async ({ ctx }) => {
    const [recentRuns, open] = await Promise.all([
      ctx.db.reconciliationRun.findMany({ orderBy: { id: "desc" }, take: 10 }),
      ctx.db.ledgerMismatch.count({ where: { resolvedAt: null } }),
    ]);
    return { lastRun: recentRuns[0] ?? null, recentRuns, openMismatches: open };
  }),

  /** Mismatches, newest first, open ones unless `includeResolved`; `cursor` is the last id shown. */
  mismatches: protectedProcedure
    .input(
      z.object({
        includeResolved: z.boolean().default(false),
        cursor: recordIdSchema.nullish(),
        limit: z.number().int().min(1).max(100).default(25),
      }),
    )
    .query(async ({ ctx, input }) => {
      const rows = await ctx.db.ledgerMismatch.findMany({
        where: {
          ...(input.includeResolved ? {} : { resolvedAt: null }),
          ...(input.cursor ? { id: { lt: BigInt(input.cursor) } } : {}),
        },
        orderBy: { id: "desc" },
        take: input.limit + 1,
      });
      const items = rows.slice(0, input.limit).map((m) => ({
        ...m,
        id: String(m.id),
        requestId: m.requestId === null ? null : String(m.requestId),
        label: MISMATCH_LABELS[m.kind],
        evidence: JSON.parse(m.evidence) as Record<string, unknown>,
      }));
      return { items, nextCursor: rows.length > input.limit ? items.at(-1)!.id : null };
    }),

  /** An engineer closes a mismatch with a note (src/server/ledger/mismatches.ts), audited. */
  resolve: engineerProcedure
    .input(z.object({ id: recordIdSchema, note: z.string().trim().min(3).max(2000) }))
    .mutation(({ ctx, input }) =>
      resolveMismatch(BigInt(input.id), input.note, { staffId: ctx.user.id, audit: ctx.audit }),
    ),
});
