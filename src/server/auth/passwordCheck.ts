import { RateLimiterPrisma } from "rate-limiter-flexible";
import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { take } from "./loginThrottle";
import { verifyPassword } from "./password";

/**
 * A signed-in user proving they know their password again (changing it,
 * enrolling a second factor). A stolen session could otherwise guess the
 * password here without the sign-in limits, so wrong passwords are limited per
 * user (counted in rate_limits, across instances) and audited.
 */
export const PASSWORD_CHECK_LIMIT = { points: 5, duration: 15 * 60 };

const perUser = new RateLimiterPrisma({
  storeClient: db,
  tableName: "rateLimit",
  keyPrefix: "password_check",
  ...PASSWORD_CHECK_LIMIT,
});

export type PasswordCheckPurpose = "change_password" | "enrol_two_factor";

/** Throws DomainError (invalid: wrong password; throttled: too many) unless `password` is the user's. */
export async function confirmPassword(
  user: { id: number; passwordHash: string },
  password: string,
  purpose: PasswordCheckPurpose,
  context: AuditContext,
): Promise<void> {
  const key = String(user.id);
  // The point is taken before the check, so parallel guesses are bounded too; a right password gives it back.
  if ((await take(perUser, key)).refused) {
    await recordAudit(context, {
      action: "password.check_failed",
      target: { type: "staff_user", id: user.id },
      details: { purpose, throttled: true },
    });
    throw new DomainError("throttled", "Too many wrong passwords; try again later.");
  }
  if (await verifyPassword(password, user.passwordHash)) {
    await perUser.reward(key, 1);
    return;
  }
  await recordAudit(context, {
    action: "password.check_failed",
    target: { type: "staff_user", id: user.id },
    details: { purpose },
  });
  throw new DomainError("invalid", "The current password is wrong.");
}
