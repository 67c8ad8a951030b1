import { isDatabaseUnavailable, isLockConflictError } from "~/server/db";
import { ApiError, errorResponse } from "./apiError";
import { presentError } from "./presentError";

/**
 * Runs a route handler body, turning every failure into the documented error
 * format, and finishes every error answer (presentError).
 */
export async function handleApi(request: Request, run: () => Promise<Response>): Promise<Response> {
  return presentError(request, await runCatching(run));
}

async function runCatching(run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ApiError) return error.toResponse();
    if (isDatabaseUnavailable(error)) {
      // Prisma's messages quote the calling code; the last line is the cause.
      console.error("database unavailable:", String((error as Error).message).trim().split("\n").at(-1));
      return errorResponse("service_unavailable");
    }
    if (isLockConflictError(error)) {
      // Deadlock victim (or lock wait timeout) again and again, after the retries in place: the database is
      // too busy for now. Nothing was half-written (every write is in a transaction that rolled back, and a
      // claim is released), so the same request later is safe: 503, not a bug's 500.
      console.error("lock conflicts persisted:", (error as Error).message.split("\n")[0]);
      return errorResponse("service_unavailable");
    }
    console.error("unhandled error:", error);
    return errorResponse("internal_error");
  }
}

/** A handler for the methods a route does not serve, e.g. `export const PUT = methodNotAllowed("POST")`. */
export function methodNotAllowed(allowed: string) {
  return (request: Request) =>
    handleApi(request, async () =>
      errorResponse("method_not_allowed", {
        message: `${request.method} is not supported here; use ${allowed}.`,
        headers: { Allow: allowed },
      }),
    );
}
