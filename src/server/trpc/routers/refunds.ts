import { z } from "zod";
import { REFUND_REASONS } from "~/server/refunds/schema";
import { refundFromDashboard } from "~/server/refunds/fromDashboard";
import { createTRPCRouter, protectedProcedure } from "~/server/trpc/trpc";

/** Refunds in the dashboard: a charge's refunds, and a refund by support or an engineer (both may refund). */
export const refundsRouter = createTRPCRouter({
  ofCharge: protectedProcedure.input(z.object({ chargeId: z.string().max(32) })).query(async ({ ctx, input }) => {
    const [charge, refunds] = await Promise.all([
      ctx.db.charge.findUnique({
        where: { id: input.chargeId },
        select: { amountCents: true, amountRefundedCents: true, refundHeldCents: true, currency: true, status: true },
      }),
      ctx.db.refund.findMany({
        where: { chargeId: input.chargeId },
        orderBy: { createdAt: "asc" },
        include: { idempotentRequest: { select: { id: true } } },
      }),
    ]);
    return {
      charge,
      refunds: refunds.map(({ idempotentRequest, ...r }) => ({ ...r, requestId: idempotentRequest?.id.toString() })),
    };
  }),

  create: protectedProcedure
    .input(
      z.object({
        chargeId: z.string().regex(/^ch_[0-9a-f]{24}$/),
        seenRefundedCents: z.number().int().min(0),
        amountCents: z.number().int().min(1).max(99_999_999).optional(),
        reason: z.enum(REFUND_REASONS),
        note: z.string().trim().min(3, "say why (at least 3 characters)").max(500),
      }),
    )
    .mutation(({ ctx, input }) => refundFromDashboard(input, ctx.audit)),
});
