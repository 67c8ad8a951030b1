import { env } from "~/env";
import { errorResponse, jsonResponse } from "~/server/http/apiError";
import { handleApi } from "~/server/http/handleApi";
import { sampleDiagnostics } from "~/server/observability/diagnostics";

export const dynamic = "force-dynamic";

/**
 * GET /api/diagnostics: memory after a forced full GC, event-loop delay and pool use of this process
 * (src/server/observability/diagnostics.ts), for the soak benchmark only: 404 unless BENCHMARK_DIAGNOSTICS=1.
 */
export async function GET(request: Request) {
  return handleApi(request, async () => {
    if (!env.BENCHMARK_DIAGNOSTICS) {
      return errorResponse("not_found", { message: `No endpoint GET ${new URL(request.url).pathname}.` });
    }
    return jsonResponse(200, JSON.stringify(sampleDiagnostics()), { "Cache-Control": "no-store" });
  });
}
