import { isDatabaseUnavailable, isLockConflictError } from "~/server/db";
import { newRequestId, withLogContext } from "~/server/observability/context";
import { log } from "~/server/observability/log";
import { ApiError, errorResponse } from "./apiError";
import { presentError } from "./presentError";

/**
 * Runs a route handler body, turning every failure into the documented error
 * format, and finishes every error answer (presentError). Everything logged
 * meanwhile carries the request's context (observability/context.ts), its
 * Request-Id included, which the answer carries too.
 */
export async function handleApi(
  request: Request,
  run: () => Promise<Response>,
  /** Called with the final answer, still in the request's log context (a money route notes it on the timeline). */
  answered?: (response: Response) => void,
): Promise<Response> {
  return withRequestId(request, async () => {
    const response = await presentError(request, await runCatching(run));
    answered?.(response);
    return response;
  });
}

/** Runs `answer` under a new Request-Id, in the log context and on the response (every API and tRPC answer). */
export async function withRequestId(request: Request, answer: () => Promise<Response>): Promise<Response> {
  const requestId = newRequestId();
  const context = { requestId, method: request.method, path: new URL(request.url).pathname };
  const response = await withLogContext(context, answer);
  response.headers.set("Request-Id", requestId);
  return response;
}

async function runCatching(run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ApiError) return error.toResponse();
    if (isDatabaseUnavailable(error)) {
      // Prisma's messages quote the calling code; the last line is the cause.
      const cause = String((error as Error).message)
        .trim()
        .split("\n")
        .at(-1);
      log.error({ cause }, "database unavailable: answered 503");
      return errorResponse("service_unavailable");
    }
    if (isLockConflictError(error)) {
      // Deadlock victim (or lock wait timeout) again and again, after the retries in place: the database is
      // too busy for now. Nothing was half-written (every write is in a transaction that rolled back, and a
      // claim is released), so the same request later is safe: 503, not a bug's 500.
      log.error({ err: error }, "lock conflicts persisted: answered 503");
      return errorResponse("service_unavailable");
    }
    log.error({ err: error }, "unhandled error: answered 500");
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
