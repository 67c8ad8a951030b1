import { z } from "zod";
import { casesOfCharge, halvesOf } from "~/server/doubleCharges/cases";
import { approveRefund, refundHalf, rejectRefund } from "~/server/doubleCharges/refund";
import { awaitingApproval, refundControls, usageOf } from "~/server/refunds/staffIntentions";
import { REFUND_REASONS } from "~/server/refunds/schema";
import { createTRPCRouter, protectedProcedure } from "~/server/trpc/trpc";

/**
 * Refunds in the dashboard: a charge's refunds (who made each, support's notes) and its double-charge cases, and
 * a refund by support or an engineer (both may refund).
 */
export const refundsRouter = createTRPCRouter({
  ofCharge: protectedProcedure.input(z.object({ chargeId: z.string().max(32) })).query(async ({ ctx, input }) => {
    const [charge, halves, cases, records] = await Promise.all([
      ctx.db.charge.findUnique({
        where: { id: input.chargeId },
        select: { amountCents: true, amountRefundedCents: true, refundHeldCents: true, currency: true, status: true },
      }),
      halvesOf([input.chargeId]),
      casesOfCharge(input.chargeId),
      ctx.db.refund.findMany({
        where: { chargeId: input.chargeId },
        select: { id: true, idempotentRequestId: true },
      }),
    ]);
    const requestOf = new Map(records.map((r) => [r.id, r.idempotentRequestId?.toString()]));
    const refunds = (halves.get(input.chargeId)?.refunds ?? []).map((r) => ({ ...r, requestId: requestOf.get(r.id) }));
    return { charge, refunds, cases };
  }),

  create: protectedProcedure
    .input(
      z.object({
        chargeId: z.string().regex(/^ch_[0-9a-f]{24}$/),
        seenRefundedCents: z.number().int().min(0),
        amountCents: z.number().int().min(1).max(99_999_999).optional(),
        reason: z.enum(REFUND_REASONS),
        note: z.string().trim().min(3, "say why (at least 3 characters)").max(500),
        /** The override: this charge's double charge had its other charge refunded already. */
        bothHalves: z.boolean().optional(),
      }),
    )
    .mutation(({ ctx, input }) => refundHalf(input, ctx.user, ctx.audit)),

  /** The controls in force and the signed-in person's use of them (the refund dialog and Approvals show them). */
  controls: protectedProcedure.query(async ({ ctx }) => ({
    ...refundControls(),
    usage: await usageOf(ctx.user.id),
    secondFactorPassed: ctx.user.twoFactorVerified === true,
    me: ctx.user.id,
  })),

  /** Refund requests above the threshold, waiting for a second person. */
  awaitingApproval: protectedProcedure.query(() => awaitingApproval()),

  approve: protectedProcedure
    .input(z.object({ id: z.string().regex(/^\d{1,18}$/) }))
    .mutation(({ ctx, input }) => approveRefund(BigInt(input.id), ctx.user, ctx.audit)),

  reject: protectedProcedure
    .input(
      z.object({
        id: z.string().regex(/^\d{1,18}$/),
        note: z.string().trim().min(3, "say why (at least 3 characters)").max(500),
      }),
    )
    .mutation(({ ctx, input }) => rejectRefund(BigInt(input.id), input.note, ctx.user, ctx.audit)),
});
