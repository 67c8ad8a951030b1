import { isDatabaseUnavailable } from "~/server/db";
import { ApiError, errorResponse } from "./apiError";

/** Runs a route handler body, turning every failure into the documented error format. */
export async function handleApi(run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ApiError) return error.toResponse();
    if (isDatabaseUnavailable(error)) {
      // Prisma's messages quote the calling code; the last line is the cause.
      console.error("database unavailable:", String((error as Error).message).trim().split("\n").at(-1));
      return errorResponse(503, "service_unavailable", "The service is temporarily unavailable; retry with the same Idempotency-Key.", {
        headers: { "Retry-After": "2" },
      });
    }
    console.error("unhandled error:", error);
    return errorResponse(500, "internal_error", "An internal error occurred.");
  }
}
