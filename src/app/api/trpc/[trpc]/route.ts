import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { log } from "~/server/observability/log";
import { appRouter } from "~/server/trpc/root";
import { createTRPCContext } from "~/server/trpc/trpc";

export const dynamic = "force-dynamic";

const handler = (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: () => createTRPCContext({ headers: req.headers }),
    onError: ({ path, error }) => {
      if (error.code === "INTERNAL_SERVER_ERROR") log.error({ path, err: error.cause ?? error }, "tRPC internal error");
    },
  });

export { handler as GET, handler as POST };
