/**
 * Managing dashboard staff: add, change role, disable and enable, reset a lost
 * second factor. A role change, disabling and a reset end the user's sessions,
 * so they take effect on the very next request. Every change is audited.
 * Used by the dashboard (tRPC) and `npm run staff`.
 */
import { randomBytes } from "node:crypto";
import type { StaffRole } from "~/generated/prisma/client";
import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { hashPassword } from "~/server/auth/password";
import { endSessionsOf } from "~/server/auth/session";
import { normalizeEmail } from "~/server/auth/email";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";

export async function listStaff() {
  const now = new Date();
  const users = await db.staffUser.findMany({
    orderBy: { email: "asc" },
    include: { _count: { select: { sessions: { where: { expiresAt: { gt: now }, stage: "active" } } } } },
  });
  return users.map((u) => ({
    id: u.id,
    email: u.email,
    name: u.name,
    role: u.role,
    createdAt: u.createdAt,
    disabledAt: u.disabledAt,
    twoFactor: !!u.totpSecret,
    activeSessions: u._count.sessions,
  }));
}

/** A first password for a new user, shown once to whoever added them. */
export const temporaryPassword = () => randomBytes(12).toString("base64url");

export async function createStaff(
  input: { email: string; name: string; role: StaffRole; password?: string },
  context: AuditContext,
) {
  const email = normalizeEmail(input.email);
  const password = input.password ?? temporaryPassword();
  const passwordHash = await hashPassword(password);
  try {
    return await db.$transaction(async (tx) => {
      // The first password was chosen by someone else (or shown to them): its owner must replace it first.
      const data = { email, name: input.name, role: input.role, passwordHash, mustChangePassword: true };
      const user = await tx.staffUser.create({ data });
      const details = { email, role: input.role };
      await recordAudit(context, { action: "staff.created", target: { type: "staff_user", id: user.id }, details }, tx);
      return { user, password };
    });
  } catch (error) {
    if ((error as { code?: string }).code === "P2002")
      throw new DomainError("conflict", `There is already a staff user ${email}.`);
    throw error;
  }
}

async function requireOther(userId: number, context: AuditContext) {
  if (context.actor.type === "staff" && context.actor.id === userId) {
    throw new DomainError("invalid", "You cannot change your own role or disable yourself; ask another engineer.");
  }
  const user = await db.staffUser.findUnique({ where: { id: userId } });
  if (!user) throw new DomainError("not_found", `There is no staff user ${userId}.`);
  return user;
}

async function revokeSessions(userId: number, reason: string, context: AuditContext) {
  const ended = await endSessionsOf(userId);
  if (ended > 0)
    await recordAudit(context, {
      action: "session.revoked",
      target: { type: "staff_user", id: userId },
      details: { reason, ended },
    });
  return ended;
}

export async function setRole(userId: number, role: StaffRole, context: AuditContext) {
  const user = await requireOther(userId, context);
  if (user.role === role) return { ended: 0 };
  await db.$transaction(async (tx) => {
    await tx.staffUser.update({ where: { id: userId }, data: { role } });
    const details = { email: user.email, from: user.role, to: role };
    await recordAudit(
      context,
      { action: "staff.role_changed", target: { type: "staff_user", id: userId }, details },
      tx,
    );
  });
  return { ended: await revokeSessions(userId, "role_changed", context) };
}

export async function setDisabled(userId: number, disabled: boolean, context: AuditContext) {
  const user = await requireOther(userId, context);
  if (!!user.disabledAt === disabled) return { ended: 0 };
  await db.$transaction(async (tx) => {
    await tx.staffUser.update({ where: { id: userId }, data: { disabledAt: disabled ? new Date() : null } });
    const action = disabled ? "staff.disabled" : "staff.enabled";
    await recordAudit(
      context,
      { action, target: { type: "staff_user", id: userId }, details: { email: user.email } },
      tx,
    );
  });
  return { ended: disabled ? await revokeSessions(userId, "disabled", context) : 0 };
}

/** For a lost authenticator: the user signs in with the password alone and enrols again. */
export async function resetTwoFactor(userId: number, context: AuditContext) {
  const user = await requireOther(userId, context);
  await db.$transaction(async (tx) => {
    const data = { totpSecret: null, totpPendingSecret: null, totpEnabledAt: null, totpLastStep: null };
    await tx.staffUser.update({ where: { id: userId }, data });
    await recordAudit(
      context,
      { action: "two_factor.reset", target: { type: "staff_user", id: userId }, details: { email: user.email } },
      tx,
    );
  });
  return { ended: await revokeSessions(userId, "two_factor_reset", context) };
}
