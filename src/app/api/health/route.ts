import { currentUser } from "~/server/auth/session";
import { db, poolUsage } from "~/server/db";
import { jsonResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";
import { hasMetricsCredential } from "~/server/observability/metricsCredential";

export const dynamic = "force-dynamic";

/**
 * GET /api/health: up (200 `{"status":"ok"}`) or down (503), for anyone: a load balancer needs no more. The pool's
 * figures and recent use (benchmarks read them) only for the metrics credential or a signed-in staff member:
 * they tell a stranger how busy the service is and when.
 */
export async function GET(request: Request) {
  return handleApi(request, async () => {
    await db.$queryRaw`SELECT 1`;
    const details = hasMetricsCredential(request) || (await currentUser()) !== null;
    const body = details ? { status: "ok", database: "ok", pool: poolUsage } : { status: "ok" };
    return jsonResponse(200, JSON.stringify(body), { "Cache-Control": "no-store" });
  });
}
