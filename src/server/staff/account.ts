/**
 * What a signed-in staff member does to their own account: enrol a TOTP second
 * factor and change their password. Both ask for the password again (throttled:
 * passwordCheck.ts) and end the user's other sessions.
 */
import QRCode from "qrcode";
import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { hashPassword, MIN_PASSWORD_LENGTH } from "~/server/auth/password";
import { confirmPassword } from "~/server/auth/passwordCheck";
import { endSessionsOf } from "~/server/auth/session";
import { acceptTotp, newTotpSecret, totpUri } from "~/server/auth/totp";
import { openTotpSecret, sealTotpSecret } from "~/server/auth/totpSecretBox";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";

/** Step 1: the password, then a new secret, kept (sealed) as pending until a code from it is confirmed. */
export async function startTwoFactorEnrolment(userId: number, password: string, context: AuditContext) {
  const user = await db.staffUser.findUniqueOrThrow({ where: { id: userId } });
  if (user.totpSecret) throw new DomainError("conflict", "Two-factor sign-in is already set up.");
  await confirmPassword(user, password, "enrol_two_factor", context);
  const secret = newTotpSecret();
  await db.staffUser.update({ where: { id: userId }, data: { totpPendingSecret: sealTotpSecret(secret, userId) } });
  const uri = totpUri(user.email, secret);
  return { secret, uri, qrSvg: await QRCode.toString(uri, { type: "svg", margin: 1 }) };
}

/** Step 2: a code from the authenticator proves it has the secret; the current session counts as verified. */
export async function confirmTwoFactorEnrolment(
  userId: number,
  code: string,
  sessionId: string | null,
  context: AuditContext,
) {
  const user = await db.staffUser.findUniqueOrThrow({ where: { id: userId } });
  if (!user.totpPendingSecret) throw new DomainError("invalid", "Start the set-up first.");
  const step = await acceptTotp(openTotpSecret(user.totpPendingSecret, userId), code.trim(), null);
  if (step === null)
    throw new DomainError("invalid", "That code is not right; check the time on your device and try again.");
  await db.$transaction(async (tx) => {
    const data = {
      totpSecret: user.totpPendingSecret,
      totpPendingSecret: null,
      totpEnabledAt: new Date(),
      totpLastStep: step,
    };
    await tx.staffUser.update({ where: { id: userId }, data });
    if (sessionId) await tx.staffSession.update({ where: { id: sessionId }, data: { twoFactor: true } });
    await recordAudit(context, { action: "two_factor.enrolled", target: { type: "staff_user", id: userId } }, tx);
  });
  await endSessionsOf(userId, sessionId ?? undefined);
}

export async function changePassword(
  userId: number,
  input: { current: string; next: string },
  sessionId: string | null,
  context: AuditContext,
) {
  const user = await db.staffUser.findUniqueOrThrow({ where: { id: userId } });
  await confirmPassword(user, input.current, "change_password", context);
  if (input.next.length < MIN_PASSWORD_LENGTH) {
    throw new DomainError("invalid", `The new password must be at least ${MIN_PASSWORD_LENGTH} characters.`);
  }
  const passwordHash = await hashPassword(input.next);
  await db.$transaction(async (tx) => {
    await tx.staffUser.update({ where: { id: userId }, data: { passwordHash, mustChangePassword: false } });
    await recordAudit(context, { action: "password.changed", target: { type: "staff_user", id: userId } }, tx);
  });
  await endSessionsOf(userId, sessionId ?? undefined);
}
