import { env } from "~/env";
import { countInProgress } from "~/server/idempotency/reading";
import { createTRPCRouter, protectedProcedure } from "~/server/trpc/trpc";

export const sweepRouter = createTRPCRouter({
  status: protectedProcedure.query(async ({ ctx }) => {
    const recentRuns = await ctx.db.sweepRun.findMany({ orderBy: { id: "desc" }, take: 10 });
    // The table's size from InnoDB's statistics (an estimate), never a COUNT(*) over millions of rows; the
    // records in progress are few, found along their own index.
    const [inProgress, size] = await Promise.all([
      countInProgress(),
      ctx.db.$queryRaw<{ bytes: bigint | number | null; rows: bigint | number | null }[]>`
        SELECT data_length + index_length AS bytes, table_rows AS \`rows\` FROM information_schema.tables
         WHERE table_schema = DATABASE() AND table_name = 'idempotent_requests'`,
    ]);
    return {
      lastRun: recentRuns[0] ?? null,
      recentRuns,
      approximateRecords: Number(size[0]?.rows ?? 0),
      inProgress,
      tableBytes: Number(size[0]?.bytes ?? 0),
      intervalMs: env.SWEEP_INTERVAL_MS,
      reapAfterMs: env.REAP_AFTER_MS,
    };
  }),
});
