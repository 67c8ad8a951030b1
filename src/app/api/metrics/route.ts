import { env } from "~/env";
import { errorResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";
import { metrics } from "~/server/observability/metrics";
import { hasMetricsCredential } from "~/server/observability/metricsCredential";
import { ensureKeylessShareGauge } from "~/server/rollout/keylessShareGauge";

export const dynamic = "force-dynamic";

/**
 * GET /api/metrics: the Prometheus text format (src/server/observability/metrics.ts),
 * for `Authorization: Bearer <METRICS_TOKEN>`. Without METRICS_TOKEN set there
 * are no metrics to scrape: 404.
 */
export async function GET(request: Request) {
  return handleApi(request, async () => {
    if (!env.METRICS_TOKEN) return errorResponse("not_found", { message: "Metrics are off: set METRICS_TOKEN." });
    if (!hasMetricsCredential(request)) return errorResponse("unauthorized");
    ensureKeylessShareGauge();
    const body = await metrics.registry.metrics();
    const headers = { "Content-Type": metrics.registry.contentType, "Cache-Control": "no-store" };
    return new Response(body, { status: 200, headers });
  });
}
