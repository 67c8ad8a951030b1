/**
 * The tRPC bootstrap: context, initialisation and the procedures every router
 * builds on. Role checks live here and nowhere else.
 */
import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { getSession, type SessionUser } from "~/server/auth/session";
import { db } from "~/server/db";

/** The context from plain values: what tests and server components use. */
export function createInnerTRPCContext(opts: { user: SessionUser | null }) {
  return { db, user: opts.user };
}

/** The context of an HTTP request: the staff user from the session cookie. */
export async function createTRPCContext(_opts: { headers: Headers }) {
  const session = await getSession();
  return createInnerTRPCContext({ user: session.user ?? null });
}

export type Context = ReturnType<typeof createInnerTRPCContext>;

const t = initTRPC.context<Context>().create({
  transformer: superjson,
  errorFormatter: ({ shape, error }) => ({
    ...shape,
    data: { ...shape.data, zodError: error.cause instanceof ZodError ? error.cause.flatten() : null },
  }),
});

export const createCallerFactory = t.createCallerFactory;
export const createTRPCRouter = t.router;

export const publicProcedure = t.procedure;

/** Any signed-in staff member (support and engineers): read access. */
export const protectedProcedure = t.procedure.use(({ ctx, next }) => {
  if (!ctx.user) throw new TRPCError({ code: "UNAUTHORIZED", message: "Sign in first." });
  return next({ ctx: { ...ctx, user: ctx.user } });
});

/** Engineers only: changing how the API behaves. */
export const engineerProcedure = protectedProcedure.use(({ ctx, next }) => {
  if (ctx.user.role !== "engineer") throw new TRPCError({ code: "FORBIDDEN", message: "Only engineers can do this." });
  return next({ ctx });
});
