import { ApiError, errorResponse } from "./apiError";
import { presentError } from "./presentError";

/** Connection-level failures: the database is down or unreachable, not a bug. */
const UNAVAILABLE_CODES = new Set([
  "P1001", "P1002", "P1008", "P1017", "P2024", "P2028",
  "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE",
  "ER_GET_CONNECTION_TIMEOUT", "ER_CONNECTION_TIMEOUT", "ER_SOCKET_UNEXPECTED_CLOSE",
  "ER_CONNECTION_ALREADY_CLOSED", "ER_CLOSING_POOL", "ER_POOL_ALREADY_CLOSED", "ER_CMD_CONNECTION_CLOSED",
  "ER_SERVER_SHUTDOWN", "ER_CONNECTION_KILLED",
]);
const UNAVAILABLE_MESSAGE = /pool timeout|unable to start a transaction|connection (refused|closed|lost|timeout)|socket (has )?(unexpectedly )?(been )?closed|server shutdown|can't reach database|ECONNREFUSED|ECONNRESET|retrieve connection from pool timeout/i;

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    const candidate = e as { code?: unknown; message?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } };
    if (typeof candidate.code === "string" && UNAVAILABLE_CODES.has(candidate.code)) return true;
    if (typeof candidate.message === "string" && UNAVAILABLE_MESSAGE.test(candidate.message)) return true;
    e = candidate.meta?.driverAdapterError ?? candidate.cause;
  }
  return false;
}

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
