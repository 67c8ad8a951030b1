import { timingSafeEqual } from "node:crypto";
import { env } from "~/env";
import { errorResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";
import { metrics } from "~/server/observability/metrics";
import { ensureKeylessShareGauge } from "~/server/rollout/keylessShareGauge";

export const dynamic = "force-dynamic";

/** Compares in constant time, so the answer's timing says nothing about how much of a guess was right. */
function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * GET /api/metrics: the Prometheus text format (src/server/observability/metrics.ts),
 * for `Authorization: Bearer <METRICS_TOKEN>`. Without METRICS_TOKEN set there
 * are no metrics to scrape: 404.
 */
export async function GET(request: Request) {
  return handleApi(request, async () => {
    if (!env.METRICS_TOKEN) return errorResponse("not_found", { message: "Metrics are off: set METRICS_TOKEN." });
    const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1];
    if (!given || !sameToken(given, env.METRICS_TOKEN)) return errorResponse("unauthorized");
    ensureKeylessShareGauge();
    const body = await metrics.registry.metrics();
    const headers = { "Content-Type": metrics.registry.contentType, "Cache-Control": "no-store" };
    return new Response(body, { status: 200, headers });
  });
}
