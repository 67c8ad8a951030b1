import { accountRouter } from "./routers/account";
import { apiClientsRouter } from "./routers/apiClients";
import { auditRouter } from "./routers/audit";
import { customersRouter } from "./routers/customers";
import { ledgerRouter } from "./routers/ledger";
import { refundsRouter } from "./routers/refunds";
import { requestsRouter } from "./routers/requests";
import { rolloutRouter } from "./routers/rollout";
import { staffRouter } from "./routers/staff";
import { sweepRouter } from "./routers/sweep";
import { webhooksRouter } from "./routers/webhooks";
import { createCallerFactory, createTRPCRouter } from "./trpc";

export const appRouter = createTRPCRouter({
  account: accountRouter,
  apiClients: apiClientsRouter,
  audit: auditRouter,
  customers: customersRouter,
  refunds: refundsRouter,
  requests: requestsRouter,
  rollout: rolloutRouter,
  staff: staffRouter,
  sweep: sweepRouter,
  ledger: ledgerRouter,
  webhooks: webhooksRouter,
});

export type AppRouter = typeof appRouter;

/** Server-side calls (tests, server components): `createCaller(createInnerTRPCContext({ user }))`. */
export const createCaller = createCallerFactory(appRouter);
