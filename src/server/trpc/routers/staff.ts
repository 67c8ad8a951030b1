import { z } from "zod";
import { createStaff, listStaff, resetTwoFactor, setDisabled, setRole } from "~/server/staff/manage";
import { createTRPCRouter, engineerProcedure } from "~/server/trpc/trpc";

const role = z.enum(["support", "engineer"]);
const userId = z.object({ userId: z.number().int().positive() });

/** Engineers manage who can use the dashboard; role changes and disabling end the user's sessions. */
export const staffRouter = createTRPCRouter({
  list: engineerProcedure.query(() => listStaff()),

  /** Returns the new user's first password, once. */
  create: engineerProcedure
    .input(z.object({ email: z.email().max(255), name: z.string().trim().min(1).max(100), role }))
    .mutation(async ({ ctx, input }) => {
      const { user, password } = await createStaff(input, ctx.audit);
      return { userId: user.id, email: user.email, temporaryPassword: password };
    }),

  setRole: engineerProcedure
    .input(userId.extend({ role }))
    .mutation(({ ctx, input }) => setRole(input.userId, input.role, ctx.audit)),

  setDisabled: engineerProcedure
    .input(userId.extend({ disabled: z.boolean() }))
    .mutation(({ ctx, input }) => setDisabled(input.userId, input.disabled, ctx.audit)),

  resetTwoFactor: engineerProcedure.input(userId).mutation(({ ctx, input }) => resetTwoFactor(input.userId, ctx.audit)),
});
