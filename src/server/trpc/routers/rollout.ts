import { z } from "zod";
import { listAudit } from "~/server/audit/audit";
import {
  idempotencyModeSchema,
  setClientKeyRequired,
  setIdempotencyMode,
  switchReasonSchema,
} from "~/server/rollout/mode";
import { keylessSeries, MAX_CHART_CLIENTS, rolloutStatus } from "~/server/rollout/stats";
import { createTRPCRouter, engineerProcedure, protectedProcedure } from "~/server/trpc/trpc";

const MODE_ACTIONS = ["mode.changed", "client_mode.changed"] as const;

export const rolloutRouter = createTRPCRouter({
  /** The decision: mode, per-client traffic in the window, who blocks enforcing, what a switch would reject. */
  status: protectedProcedure.query(() => rolloutStatus()),

  /** The keyless share over time, for all clients and, each on its own line, the clients asked for; a route or all. */
  series: protectedProcedure
    .input(
      z.object({
        /** `auto`: per minute while the counts are a few hours old, else per hour (the answer says which). */
        granularity: z.enum(["auto", "minute", "hour", "day"]).default("auto"),
        clientIds: z.array(z.number().int().positive()).max(MAX_CHART_CLIENTS).default([]),
        /** A money route as the records name it ("POST /api/refunds"); none: every route. */
        route: z.string().min(1).max(64).nullish(),
      }),
    )
    .query(({ input }) => keylessSeries(input.granularity, input.clientIds, new Date(), input.route ?? null)),

  /** Switches of the global mode and of single clients, newest first, paged. */
  modeChanges: protectedProcedure
    .input(
      z.object({
        cursor: z
          .string()
          .regex(/^\d{1,18}$/)
          .nullish(),
        limit: z.number().int().min(1).max(50).default(10),
      }),
    )
    .query(async ({ ctx, input }) => {
      const page = await listAudit({ actions: MODE_ACTIONS, cursor: input.cursor, limit: input.limit });
      // The clients switched, by name: "client #4" named nobody support knows.
      const ids = [...new Set(page.items.flatMap((e) => (e.action === "mode.changed" ? [] : [Number(e.targetId)])))];
      const clients = ids.length
        ? await ctx.db.apiClient.findMany({ where: { id: { in: ids } }, select: { id: true, name: true } })
        : [];
      const nameOf = new Map(clients.map((c) => [String(c.id), c.name]));
      return {
        items: page.items.map((e) => ({
          id: e.id,
          createdAt: e.createdAt,
          actor: e.actorLabel ?? e.actorType,
          scope: e.action === "mode.changed" ? ("global" as const) : ("client" as const),
          targetId: e.targetId,
          clientName: e.targetId === null ? null : (nameOf.get(e.targetId) ?? null),
          from: String(e.details?.from ?? ""),
          to: String(e.details?.to ?? ""),
          reason: typeof e.details?.reason === "string" ? e.details.reason : null,
        })),
        nextCursor: page.nextCursor,
      };
    }),

  setMode: engineerProcedure
    .input(z.object({ mode: idempotencyModeSchema, reason: switchReasonSchema }))
    .mutation(({ ctx, input }) => setIdempotencyMode(input.mode, ctx.audit, input.reason)),

  /** Require the header of one client while the global mode stays optional (or give it back to the global mode). */
  setClientRequired: engineerProcedure
    .input(z.object({ clientId: z.number().int().positive(), required: z.boolean(), reason: switchReasonSchema }))
    .mutation(({ ctx, input }) => setClientKeyRequired(input.clientId, input.required, ctx.audit, input.reason)),
});
