import { z } from "zod";
import { createClient, issueKey, listApiClients, revokeKey, rotateKey } from "~/server/apiClients/manage";
import { createTRPCRouter, engineerProcedure } from "~/server/trpc/trpc";

const clientId = z.object({ clientId: z.number().int().positive() });

/** Engineers onboard API clients and manage their keys; each key is returned once, when issued. */
export const apiClientsRouter = createTRPCRouter({
  list: engineerProcedure.query(() => listApiClients()),

  create: engineerProcedure
    .input(z.object({ name: z.string().trim().min(1).max(100), contactEmail: z.email().max(255).nullable() }))
    .mutation(async ({ ctx, input }) => {
      const { client, apiKey } = await createClient(input, ctx.audit);
      return { clientId: client.id, apiKey };
    }),

  issueKey: engineerProcedure.input(clientId).mutation(({ ctx, input }) => issueKey(input.clientId, ctx.audit)),

  /** The old keys keep working for `graceHours` (0: they stop at once). */
  rotateKey: engineerProcedure
    .input(
      clientId.extend({
        graceHours: z
          .number()
          .int()
          .min(0)
          .max(24 * 30),
      }),
    )
    .mutation(({ ctx, input }) => rotateKey(input.clientId, input.graceHours * 3_600_000, ctx.audit)),

  revokeKey: engineerProcedure
    .input(z.object({ keyId: z.number().int().positive() }))
    .mutation(({ ctx, input }) => revokeKey(input.keyId, ctx.audit)),
});
