import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { env } from "~/env";
import { totpKeyProblem } from "~/lib/totpKeyProblem";

/**
 * TOTP secrets at rest: AES-256-GCM with TOTP_ENCRYPTION_KEY, a key kept in
 * the environment and never in the database, so a copy of `staff_users` (a
 * backup, a read-only leak) cannot generate codes. The user's id is the
 * associated data: a sealed secret copied onto another user's row does not open.
 * Stored as `v1.<iv>.<tag>.<ciphertext>` (base64url).
 */
const VERSION = "v1";

function key(): Buffer {
  const problem = totpKeyProblem(env.TOTP_ENCRYPTION_KEY);
  if (problem) throw new Error(`TOTP_ENCRYPTION_KEY ${problem}`);
  return Buffer.from(env.TOTP_ENCRYPTION_KEY!, "hex");
}

const aad = (userId: number) => Buffer.from(`staff_user:${userId}`);

export function sealTotpSecret(secret: string, userId: number): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key(), iv).setAAD(aad(userId));
  const data = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), data]
    .map((p) => (typeof p === "string" ? p : p.toString("base64url")))
    .join(".");
}

/** Whether a stored value is sealed (secrets enrolled before sealing was introduced are plain base32). */
export const isSealed = (stored: string) => stored.startsWith(`${VERSION}.`);

/** The secret of a stored value; a legacy plain one as it is (sign-in seals it: staffLogin.ts). */
export function openTotpSecret(stored: string, userId: number): string {
  if (!isSealed(stored)) return stored;
  const [, iv, tag, data] = stored.split(".").map((p) => Buffer.from(p, "base64url"));
  const decipher = createDecipheriv("aes-256-gcm", key(), iv!).setAAD(aad(userId));
  decipher.setAuthTag(tag!);
  return Buffer.concat([decipher.update(data!), decipher.final()]).toString("utf8");
}
