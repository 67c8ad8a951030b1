import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { ApiError, errorResponse } from "~/server/http/apiError";
import { refuseCrossSite } from "~/server/http/crossSite";
import { withRequestId } from "~/server/http/handleApi";
import { jsonDepthProblem, readBodyBytes } from "~/server/http/readJsonBody";
import { log } from "~/server/observability/log";
import { appRouter } from "~/server/trpc/root";
import { MAX_BATCH_SIZE, MAX_BODY_BYTES } from "~/server/trpc/limits";
import { createTRPCContext } from "~/server/trpc/trpc";

export const dynamic = "force-dynamic";

/**
 * The request with its body read (at most MAX_BODY_BYTES, in full within the body deadline, nested at most
 * MAX_JSON_DEPTH deep), or the error's answer. A query's input travels in the URL: its depth is checked too.
 */
async function withCheckedBody(req: Request): Promise<Request | Response> {
  try {
    const input = new URL(req.url).searchParams.get("input");
    const tooDeep = input === null ? null : jsonDepthProblem(input);
    if (tooDeep) return errorResponse("invalid_json", { message: tooDeep.replace("Request body", "The input") });
    if (!req.body) return req;
    const body = await readBodyBytes(req, MAX_BODY_BYTES);
    const bodyTooDeep = jsonDepthProblem(body.toString("utf8"));
    if (bodyTooDeep) return errorResponse("invalid_json", { message: bodyTooDeep });
    return new Request(req.url, { method: req.method, headers: req.headers, body });
  } catch (error) {
    if (error instanceof ApiError) return error.toResponse();
    throw error;
  }
}

/** Every dashboard answer carries a Request-Id, as the API's do, and every log line of it names the id. */
const handler = (incoming: Request) => withRequestId(incoming, () => answer(incoming));

async function answer(incoming: Request) {
  // Mutations are POSTs; queries are GETs, and a cross-site page cannot read their answers.
  if (incoming.method !== "GET") {
    const refused = refuseCrossSite(incoming);
    if (refused) return refused;
  }
  const req = await withCheckedBody(incoming);
  if (req instanceof Response) return req;
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    maxBatchSize: MAX_BATCH_SIZE,
    createContext: () => createTRPCContext({ headers: req.headers }),
    // Dashboard data is per user and changes all the time: never kept by a browser or a proxy.
    responseMeta: () => ({ headers: new Headers({ "Cache-Control": "no-store" }) }),
    onError: ({ path, error }) => {
      if (error.code === "INTERNAL_SERVER_ERROR") log.error({ path, err: error.cause ?? error }, "tRPC internal error");
    },
  });
}

export { handler as GET, handler as POST };
