import { env } from "~/env";
import { countInProgress } from "~/server/idempotency";
import { createTRPCRouter, protectedProcedure } from "~/server/trpc/trpc";

export const sweepRouter = createTRPCRouter({
  status: protectedProcedure.query(async ({ ctx }) => {
    const recentRuns = await ctx.db.sweepRun.findMany({ orderBy: { id: "desc" }, take: 10 });
    const [records, inProgress] = await Promise.all([
      ctx.db.idempotentRequest.count(),
      countInProgress(),
    ]);
    const size = await ctx.db.$queryRaw<{ bytes: bigint | number | null }[]>`
      SELECT data_length + index_length AS bytes FROM information_schema.tables
       WHERE table_schema = DATABASE() AND table_name = 'idempotent_requests'`;
    return {
      lastRun: recentRuns[0] ?? null,
      recentRuns,
      records,
      inProgress,
      tableBytes: Number(size[0]?.bytes ?? 0),
      intervalMs: env.SWEEP_INTERVAL_MS,
      reapAfterMs: env.REAP_AFTER_MS,
    };
  }),
});
