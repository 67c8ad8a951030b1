/**
 * Dashboard sessions, kept server-side (staff_sessions). The cookie carries a
 * random token sealed with SESSION_SECRET (iron-session's seal); the row is
 * keyed by the token's sha256. Every request re-reads the session and its user,
 * so logout, disabling a user, a role change and the timeouts take effect at
 * once: nothing about the user is trusted from the cookie.
 */
import { createHash, randomBytes } from "node:crypto";
import { sealData, unsealData } from "iron-session";
import { cookies, headers } from "next/headers";
import { env } from "~/env";
import type { SessionStage, StaffRole } from "~/generated/prisma/client";
import { db } from "~/server/db";
import { requestInfo, type RequestInfo } from "~/server/http/requestInfo";
import { sessionSecretProblem } from "~/lib/sessionSecret";

/** The signed-in staff member, as read from the database on this request. */
export type SessionUser = {
  id: number;
  email: string;
  name: string;
  role: StaffRole;
  /** This session passed the TOTP check. */
  twoFactorVerified?: boolean;
  /** The user has enrolled a TOTP second factor. */
  totpEnabled?: boolean;
  /** The first password (chosen by whoever created the user) is still in use: it must be changed first. */
  mustChangePassword?: boolean;
};

export type CurrentSession = { id: string; stage: SessionStage; user: SessionUser };

export const SESSION_COOKIE = "charges_session";
/** How long the password step lasts before the TOTP code must have been entered. */
const SECOND_FACTOR_MS = 5 * 60_000;
/** last_seen_at is written at most this often: a write per request would be a write per dashboard poll. */
const TOUCH_EVERY_MS = 60_000;

/** The secret, or an error naming what is wrong with it; the server checks this at boot (instrumentation.ts). */
export function sessionSecret(): string {
  const problem = sessionSecretProblem(env.SESSION_SECRET);
  if (problem) throw new Error(`SESSION_SECRET ${problem}`);
  return env.SESSION_SECRET!;
}

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");
const idleLimit = () => new Date(Date.now() - env.STAFF_SESSION_IDLE_MINUTES * 60_000);

/** Creates a session and sets its cookie (route handlers only: they can set cookies). */
export async function startSession(
  userId: number,
  opts: { stage: SessionStage; twoFactor: boolean; request: RequestInfo },
): Promise<string> {
  const token = randomBytes(32).toString("base64url");
  const id = hashToken(token);
  const lifetimeMs = opts.stage === "second_factor" ? SECOND_FACTOR_MS : env.STAFF_SESSION_MAX_HOURS * 3_600_000;
  // Sessions of this user that have ended by time are cleared as new ones start.
  await db.staffSession.deleteMany({
    where: { staffUserId: userId, OR: [{ expiresAt: { lt: new Date() } }, { lastSeenAt: { lt: idleLimit() } }] },
  });
  await db.staffSession.create({
    data: {
      id,
      staffUserId: userId,
      stage: opts.stage,
      twoFactor: opts.twoFactor,
      expiresAt: new Date(Date.now() + lifetimeMs),
      ipAddress: opts.request.address,
      userAgent: opts.request.userAgent,
    },
  });
  const seal = await sealData({ token }, { password: sessionSecret(), ttl: lifetimeMs / 1000 });
  (await cookies()).set(SESSION_COOKIE, seal, {
    httpOnly: true,
    sameSite: "lax",
    secure: env.NODE_ENV === "production" || (await headers()).get("x-forwarded-proto") === "https",
    path: "/",
    maxAge: Math.floor(lifetimeMs / 1000),
  });
  return id;
}

async function sessionIdFromCookie(): Promise<string | null> {
  const seal = (await cookies()).get(SESSION_COOKIE)?.value;
  if (!seal) return null;
  const data = await unsealData<{ token?: string }>(seal, { password: sessionSecret() }).catch(
    () => ({}) as { token?: string },
  );
  return typeof data.token === "string" ? hashToken(data.token) : null;
}

/**
 * The session of this request with its user, or null: no cookie, a forged or
 * stale one, an ended session, a disabled or deleted user, or a timeout.
 */
export async function currentSession(): Promise<CurrentSession | null> {
  const id = await sessionIdFromCookie();
  if (!id) return null;
  const row = await db.staffSession.findUnique({ where: { id }, include: { staffUser: true } });
  if (!row) return null;
  const now = new Date();
  if (row.expiresAt < now || row.lastSeenAt < idleLimit() || row.staffUser.disabledAt) {
    await endSession(id);
    return null;
  }
  if (now.getTime() - row.lastSeenAt.getTime() > TOUCH_EVERY_MS) {
    await db.staffSession.updateMany({ where: { id }, data: { lastSeenAt: now } });
  }
  const u = row.staffUser;
  return {
    id,
    stage: row.stage,
    user: {
      id: u.id,
      email: u.email,
      name: u.name,
      role: u.role,
      twoFactorVerified: row.twoFactor,
      totpEnabled: !!u.totpSecret,
      mustChangePassword: u.mustChangePassword,
    },
  };
}

/** The signed-in user of a fully signed-in session (past the second factor), or null. */
export async function currentUser(): Promise<SessionUser | null> {
  const session = await currentSession();
  return session?.stage === "active" ? session.user : null;
}

export async function endSession(id: string): Promise<void> {
  await db.staffSession.deleteMany({ where: { id } });
}

/** Ends every session of a user (but `exceptId`); how many there were. */
export async function endSessionsOf(userId: number, exceptId?: string): Promise<number> {
  const { count } = await db.staffSession.deleteMany({
    where: { staffUserId: userId, ...(exceptId ? { id: { not: exceptId } } : {}) },
  });
  return count;
}

export async function clearSessionCookie(): Promise<void> {
  (await cookies()).delete(SESSION_COOKIE);
}

/** The request info of the request being handled (server components, route handlers, tRPC). */
export async function currentRequestInfo(): Promise<RequestInfo> {
  return requestInfo(await headers());
}
