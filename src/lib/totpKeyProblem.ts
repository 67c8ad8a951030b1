/**
 * Why a TOTP_ENCRYPTION_KEY is unusable, or null. No imports: the scripts that
 * start the app check a configured key with it before the environment is parsed.
 */
export function totpKeyProblem(key: string | undefined): string | null {
  if (!key) return "is not set; generate one with `openssl rand -hex 32`";
  if (!/^[0-9a-fA-F]{64}$/.test(key)) return "must be 64 hex characters (32 bytes: `openssl rand -hex 32`)";
  return null;
}
