/**
 * The tRPC bootstrap: context, initialisation and the procedures every router
 * builds on. Role checks live here and nowhere else.
 */
import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { env } from "~/env";
import { staffContext } from "~/server/audit/audit";
import { currentSession, type SessionUser } from "~/server/auth/session";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { NO_REQUEST, requestInfo, type RequestInfo } from "~/server/http/requestInfo";

/** The context from plain values: what tests and server components use. */
export function createInnerTRPCContext(opts: {
  user: SessionUser | null;
  sessionId?: string | null;
  request?: RequestInfo;
}) {
  return { db, user: opts.user, sessionId: opts.sessionId ?? null, request: opts.request ?? NO_REQUEST };
}

/** The context of an HTTP request: the staff user of the session, re-read from the database on every request. */
export async function createTRPCContext(opts: { headers: Headers }) {
  const session = await currentSession();
  const active = session?.stage === "active" ? session : null;
  return createInnerTRPCContext({
    user: active?.user ?? null,
    sessionId: active?.id ?? null,
    request: requestInfo(opts.headers),
  });
}

export type Context = ReturnType<typeof createInnerTRPCContext>;

const t = initTRPC.context<Context>().create({
  transformer: superjson,
  errorFormatter: ({ shape, error }) => {
    // An unexpected error's message can quote SQL, Prisma or a stack: it stays in the server log.
    const internal = error.code === "INTERNAL_SERVER_ERROR";
    const { stack: _stack, ...data } = shape.data;
    return {
      ...shape,
      message: internal ? "Internal server error." : shape.message,
      data: { ...data, zodError: error.cause instanceof ZodError ? error.cause.flatten() : null },
    };
  },
});

export const createCallerFactory = t.createCallerFactory;
export const createTRPCRouter = t.router;

const DOMAIN_CODES = {
  not_found: "NOT_FOUND",
  conflict: "CONFLICT",
  invalid: "BAD_REQUEST",
  throttled: "TOO_MANY_REQUESTS",
} as const;

/** Expected refusals keep their message; everything else is masked by the error formatter. */
const domainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof DomainError) {
    const cause = result.error.cause;
    throw new TRPCError({ code: DOMAIN_CODES[cause.kind], message: cause.message, cause });
  }
  return result;
});

export const publicProcedure = t.procedure.use(domainErrors);

/** Any signed-in staff member (support and engineers): read access. */
export const protectedProcedure = publicProcedure.use(({ ctx, path, next }) => {
  if (!ctx.user) throw new TRPCError({ code: "UNAUTHORIZED", message: "Sign in first." });
  // A first password still in use: nothing but the account's own procedures (change it, enrol a second factor).
  if (ctx.user.mustChangePassword && !path.startsWith("account.")) {
    throw new TRPCError({ code: "FORBIDDEN", message: "Choose a new password under Account first." });
  }
  return next({ ctx: { ...ctx, user: ctx.user, audit: staffContext(ctx.user, ctx.request) } });
});

/** Engineers only: changing how the API behaves, and who may use it. */
export const engineerProcedure = protectedProcedure.use(({ ctx, next }) => {
  if (ctx.user.role !== "engineer") throw new TRPCError({ code: "FORBIDDEN", message: "Only engineers can do this." });
  if (env.STAFF_REQUIRE_2FA && !ctx.user.twoFactorVerified) {
    const message = "Engineers must sign in with two-factor authentication; set it up under Account.";
    throw new TRPCError({ code: "FORBIDDEN", message });
  }
  return next({ ctx });
});
