import { z } from "zod";
import { env } from "~/env";
import { listAudit } from "~/server/audit/audit";
import { getIdempotencyMode, idempotencyModeSchema, setIdempotencyMode } from "~/server/rollout/mode";
import { keylessTraffic } from "~/server/rollout/stats";
import { createTRPCRouter, engineerProcedure, protectedProcedure } from "~/server/trpc/trpc";

const HOUR = 3_600_000;

export const rolloutRouter = createTRPCRouter({
  overview: protectedProcedure
    .input(
      z.object({
        granularity: z.enum(["hour", "day"]).default("hour"),
        /** Keyless traffic must have been zero this long for "safe to enforce". */
        windowHours: z.number().int().min(1).max(24 * 90).default(env.SAFE_TO_ENFORCE_HOURS),
      }),
    )
    .query(async ({ ctx, input }) => {
      const now = Date.now();
      const since = new Date(now - (input.granularity === "hour" ? 48 : 30 * 24) * HOUR);
      const traffic = await keylessTraffic({ granularity: input.granularity, since });
      const windowStart = new Date(now - input.windowHours * HOUR);
      const keyedInWindow = await ctx.db.requestCountBucket.aggregate({
        where: { bucketStart: { gte: new Date(windowStart.getTime() - HOUR) } },
        _sum: { keyed: true },
      });
      const keylessFree = !traffic.lastKeylessAt || traffic.lastKeylessAt < windowStart;
      const modeChanges = await listAudit({ action: "mode.changed", limit: 20 });
      const auditLog = modeChanges.items.map((entry) => ({
        id: entry.id,
        createdAt: entry.createdAt,
        actor: entry.actorLabel ?? "unknown",
        fromMode: String(entry.details?.from),
        toMode: String(entry.details?.to),
      }));
      return {
        mode: await getIdempotencyMode(),
        ...traffic,
        windowHours: input.windowHours,
        safeToEnforce: keylessFree,
        keyedRequestsInWindow: keyedInWindow._sum.keyed ?? 0,
        auditLog,
      };
    }),

  setMode: engineerProcedure.input(z.object({ mode: idempotencyModeSchema })).mutation(async ({ ctx, input }) => {
    return setIdempotencyMode(input.mode, ctx.audit);
  }),
});
