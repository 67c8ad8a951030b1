import { z } from "zod";
import { AUDIT_ACTIONS, listAudit } from "~/server/audit/audit";
import { createTRPCRouter, engineerProcedure } from "~/server/trpc/trpc";

export const auditRouter = createTRPCRouter({
  /** Newest first; `cursor` is the id of the last entry already shown. */
  list: engineerProcedure
    .input(
      z.object({
        action: z.enum(AUDIT_ACTIONS).optional(),
        actor: z.string().trim().max(255).optional(),
        since: z.date().optional(),
        until: z.date().optional(),
        cursor: z
          .string()
          .regex(/^\d{1,18}$/)
          .nullish(),
        limit: z.number().int().min(1).max(100).default(50),
      }),
    )
    .query(({ input }) => listAudit({ ...input, actor: input.actor || undefined })),

  actions: engineerProcedure.query(() => AUDIT_ACTIONS),
});
