import { z } from "zod";
import { env } from "~/env";
import { MAX_PASSWORD_LENGTH } from "~/server/auth/password";
import { changePassword, confirmTwoFactorEnrolment, startTwoFactorEnrolment } from "~/server/staff/account";
import { createTRPCRouter, protectedProcedure } from "~/server/trpc/trpc";

/** The signed-in user's own account. */
export const accountRouter = createTRPCRouter({
  me: protectedProcedure.query(({ ctx }) => ({
    ...ctx.user,
    twoFactorRequired: env.STAFF_REQUIRE_2FA && ctx.user.role === "engineer",
  })),

  startTwoFactor: protectedProcedure
    .input(z.object({ password: z.string().max(MAX_PASSWORD_LENGTH) }))
    .mutation(({ ctx, input }) => startTwoFactorEnrolment(ctx.user.id, input.password, ctx.audit)),

  confirmTwoFactor: protectedProcedure
    .input(z.object({ code: z.string().trim().max(16) }))
    .mutation(({ ctx, input }) => confirmTwoFactorEnrolment(ctx.user.id, input.code, ctx.sessionId, ctx.audit)),

  changePassword: protectedProcedure
    .input(z.object({ current: z.string().max(MAX_PASSWORD_LENGTH), next: z.string().max(MAX_PASSWORD_LENGTH) }))
    .mutation(({ ctx, input }) => changePassword(ctx.user.id, input, ctx.sessionId, ctx.audit)),
});
