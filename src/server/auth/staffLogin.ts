/**
 * Signing staff in and out: password, then the TOTP code for users who have
 * enrolled one. Every attempt is audited; failures are throttled per account
 * and per address; unknown e-mails cost the same time as known ones.
 */
import { recordAudit, staffContext, type AuditContext } from "~/server/audit/audit";
import { db } from "~/server/db";
import type { RequestInfo } from "~/server/http/requestInfo";
import { normalizeEmail } from "./email";
import { attemptFailed, attemptSucceeded, takeAttempt, type Attempt, type ThrottleKeys } from "./loginThrottle";
import { hashPassword, needsRehash, verifyAgainstDummy, verifyPassword } from "./password";
import { clearSessionCookie, currentSession, endSession, startSession } from "./session";
import { acceptTotp } from "./totp";
import { isSealed, openTotpSecret, sealTotpSecret } from "./totpSecretBox";

export type SignInResult =
  | { kind: "signed_in" }
  | { kind: "second_factor_required" }
  | { kind: "invalid_credentials" }
  | { kind: "invalid_code" }
  | { kind: "no_pending_sign_in" }
  | { kind: "throttled"; retryAfterSeconds: number };

type FailureReason = "unknown_email" | "wrong_password" | "disabled" | "wrong_code";

async function failed(
  keys: ThrottleKeys,
  attempt: Attempt,
  request: RequestInfo,
  reason: FailureReason,
): Promise<SignInResult> {
  await attemptFailed(keys, attempt);
  // The typed e-mail is what someone claimed, not who they are: data of the entry, never its actor.
  const context: AuditContext = { actor: { type: "anonymous" }, request };
  await recordAudit(context, { action: "login.failed", details: { reason, email: keys.email } });
  if (attempt.lastOne) {
    await recordAudit(context, { action: "login.blocked", details: { email: keys.email, address: keys.address } });
  }
  return { kind: reason === "wrong_code" ? "invalid_code" : "invalid_credentials" };
}

export async function signIn(emailInput: string, password: string, request: RequestInfo): Promise<SignInResult> {
  const keys = { email: normalizeEmail(emailInput), address: request.address };
  const attempt = await takeAttempt(keys);
  if (attempt.retryAfterSeconds > 0) return { kind: "throttled", retryAfterSeconds: attempt.retryAfterSeconds };

  const user = await db.staffUser.findUnique({ where: { email: keys.email } });
  const passwordOk = user ? await verifyPassword(password, user.passwordHash) : await verifyAgainstDummy(password);
  if (!user) return failed(keys, attempt, request, "unknown_email");
  if (!passwordOk) return failed(keys, attempt, request, "wrong_password");
  if (user.disabledAt) return failed(keys, attempt, request, "disabled");

  if (needsRehash(user.passwordHash)) {
    await db.staffUser.update({ where: { id: user.id }, data: { passwordHash: await hashPassword(password) } });
  }
  if (user.totpSecret) {
    await startSession(user.id, { stage: "second_factor", twoFactor: false, request });
    return { kind: "second_factor_required" };
  }
  await attemptSucceeded(keys);
  await startSession(user.id, { stage: "active", twoFactor: false, request });
  await recordAudit(staffContext(user, request), { action: "login.succeeded", details: { two_factor: false } });
  return { kind: "signed_in" };
}

/** The second step: the TOTP code for the session the password step started. */
export async function verifySecondFactor(code: string, request: RequestInfo): Promise<SignInResult> {
  const pending = await currentSession();
  if (pending?.stage !== "second_factor") return { kind: "no_pending_sign_in" };
  const keys = { email: pending.user.email, address: request.address };
  const attempt = await takeAttempt(keys);
  if (attempt.retryAfterSeconds > 0) return { kind: "throttled", retryAfterSeconds: attempt.retryAfterSeconds };

  const user = await db.staffUser.findUniqueOrThrow({ where: { id: pending.user.id } });
  const secret = user.totpSecret ? openTotpSecret(user.totpSecret, user.id) : null;
  const step = secret ? await acceptTotp(secret, code.trim(), user.totpLastStep) : null;
  // A secret enrolled before secrets were sealed is sealed at its first use.
  const seal = secret && !isSealed(user.totpSecret!) ? { totpSecret: sealTotpSecret(secret, user.id) } : {};
  // Conditional on the last step, so one code cannot open two sessions even when sent twice at once.
  const accepted =
    step !== null &&
    (
      await db.staffUser.updateMany({
        where: { id: user.id, OR: [{ totpLastStep: null }, { totpLastStep: { lt: step } }] },
        data: { totpLastStep: step, ...seal },
      })
    ).count === 1;
  if (!accepted) return failed(keys, attempt, request, "wrong_code");

  await endSession(pending.id);
  await attemptSucceeded(keys);
  await startSession(user.id, { stage: "active", twoFactor: true, request });
  await recordAudit(staffContext(user, request), { action: "login.succeeded", details: { two_factor: true } });
  return { kind: "signed_in" };
}

export async function signOut(request: RequestInfo): Promise<void> {
  const session = await currentSession();
  if (session) {
    await endSession(session.id);
    await recordAudit(staffContext(session.user, request), {
      action: "logout",
      target: { type: "session", id: session.id.slice(0, 12) },
    });
  }
  await clearSessionCookie();
}
