import { ledgerRouter } from "./routers/ledger";
import { requestsRouter } from "./routers/requests";
import { rolloutRouter } from "./routers/rollout";
import { sweepRouter } from "./routers/sweep";
import { createCallerFactory, createTRPCRouter } from "./trpc";

export const appRouter = createTRPCRouter({
  requests: requestsRouter,
  rollout: rolloutRouter,
  sweep: sweepRouter,
  ledger: ledgerRouter,
});

export type AppRouter = typeof appRouter;

/** Server-side calls (tests, server components): `createCaller(createInnerTRPCContext({ user }))`. */
export const createCaller = createCallerFactory(appRouter);
