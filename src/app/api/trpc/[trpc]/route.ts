import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { errorResponse } from "~/server/http/apiError";
import { refuseCrossSite } from "~/server/http/crossSite";
import { withRequestId } from "~/server/http/handleApi";
import { log } from "~/server/observability/log";
import { appRouter } from "~/server/trpc/root";
import { MAX_BATCH_SIZE, MAX_BODY_BYTES } from "~/server/trpc/limits";
import { createTRPCContext } from "~/server/trpc/trpc";

export const dynamic = "force-dynamic";

/** The request with its body read (at most MAX_BODY_BYTES), or a 413. */
async function withLimitedBody(req: Request): Promise<Request | Response> {
  const tooLarge = () =>
    errorResponse("body_too_large", { message: `Request body must be at most ${MAX_BODY_BYTES} bytes` });
  if (Number(req.headers.get("content-length")) > MAX_BODY_BYTES) return tooLarge();
  if (!req.body) return req;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      return tooLarge();
    }
    chunks.push(value);
  }
  return new Request(req.url, { method: req.method, headers: req.headers, body: Buffer.concat(chunks) });
}

/** Every dashboard answer carries a Request-Id, as the API's do, and every log line of it names the id. */
const handler = (incoming: Request) => withRequestId(incoming, () => answer(incoming));

async function answer(incoming: Request) {
  // Mutations are POSTs; queries are GETs, and a cross-site page cannot read their answers.
  if (incoming.method !== "GET") {
    const refused = refuseCrossSite(incoming);
    if (refused) return refused;
  }
  const req = await withLimitedBody(incoming);
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
