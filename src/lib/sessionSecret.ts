/**
 * Why a SESSION_SECRET is unfit, or null when it will do. It seals the
 * dashboard's session cookie, so anyone who can guess it can forge one.
 *
 * A heuristic, not a proof of randomness: it refuses what people type or copy
 * (placeholders, words, repeats, short strings) and accepts the output of
 * `openssl rand -hex 32` or `openssl rand -base64 32`.
 */
const PLACEHOLDER = /replace|change-?me|example|placeholder|your[-_]?secret|^secret|password|default/i;
const MIN_LENGTH = 32;
const MIN_BITS = 100;
const MIN_BITS_PER_CHAR = 3;

export function sessionSecretProblem(secret: string | undefined): string | null {
  if (!secret) return "is not set; generate one with `openssl rand -hex 32`";
  if (secret.length < MIN_LENGTH) return `must be at least ${MIN_LENGTH} characters (e.g. \`openssl rand -hex 32\`)`;
  if (PLACEHOLDER.test(secret)) return "looks like a placeholder; generate one with `openssl rand -hex 32`";
  if (isRepetition(secret)) return "is a repeated pattern; generate one with `openssl rand -hex 32`";
  const perChar = shannonBitsPerChar(secret);
  if (perChar < MIN_BITS_PER_CHAR || perChar * secret.length < MIN_BITS) {
    return "has too little entropy (too few distinct characters); generate one with `openssl rand -hex 32`";
  }
  return null;
}

/** The string's own character frequencies, as bits per character. */
function shannonBitsPerChar(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= (n / s.length) * Math.log2(n / s.length);
  return bits;
}

/** "abcabcabc…": a short string repeated. */
function isRepetition(s: string): boolean {
  return (s + s).indexOf(s, 1) < s.length;
}
