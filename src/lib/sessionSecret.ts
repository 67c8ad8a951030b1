/**
 * Why a SESSION_SECRET is unfit, or null when it will do. It seals the
 * dashboard's session cookie, so anyone who can guess it can forge one: it
 * must carry the entropy of 32 random bytes.
 *
 * A string cannot prove it is random, so the rule asks for the form random
 * bytes take when printed, and refuses what people type in that form:
 * - 64 or more hex digits (`openssl rand -hex 32`), or 43 or more base64 /
 *   base64url characters (`openssl rand -base64 32`), i.e. 256 bits of room;
 * - no placeholder, no repeated pattern, no common words (random base64 spells
 *   two of them by chance about once in 100 000 secrets);
 * - the spread of characters random output has: base64 mixes upper case, lower
 *   case and digits or symbols (random output misses one about once in 9 000:
 *   generate another),
 *   and the characters' own entropy is near the alphabet's (hex ≥ 3 bits a
 *   character, base64 ≥ 4: random output's least in 200 000 draws was 3.4 and 4.2).
 */
const HOW = "generate one with `openssl rand -hex 32`";
const PLACEHOLDER = /replace|change-?me|example|placeholder|your[-_]?secret|^secret|password|default/i;
const HEX = /^[0-9a-f]+$/i;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
const MIN_HEX_DIGITS = 64;
const MIN_BASE64_CHARS = 43;

/** Words a person types into a secret; four letters or more, so that random output seldom spells one. */
const COMMON_WORDS = [
  "this",
  "that",
  "with",
  "from",
  "have",
  "your",
  "very",
  "what",
  "when",
  "make",
  "like",
  "time",
  "just",
  "know",
  "take",
  "into",
  "year",
  "good",
  "some",
  "them",
  "than",
  "then",
  "look",
  "only",
  "come",
  "over",
  "think",
  "also",
  "back",
  "after",
  "work",
  "first",
  "well",
  "even",
  "want",
  "because",
  "these",
  "give",
  "most",
  "long",
  "great",
  "little",
  "world",
  "still",
  "never",
  "here",
  "thing",
  "where",
  "life",
  "should",
  "home",
  "open",
  "test",
  "secret",
  "session",
  "cookie",
  "token",
  "charge",
  "charges",
  "payment",
  "money",
  "admin",
  "super",
  "login",
  "prod",
  "production",
  "staging",
  "local",
  "develop",
  "server",
  "dashboard",
  "stripe",
  "company",
  "private",
  "random",
  "string",
  "letmein",
  "qwerty",
  "asdf",
  "hunter",
  "dragon",
  "monkey",
  "master",
  "welcome",
  "shadow",
  "sunshine",
  "princess",
  "football",
  "baseball",
  "trust",
  "horse",
  "battery",
  "staple",
  "correct",
  "quick",
  "brown",
  "jumps",
  "lazy",
  "lorem",
  "ipsum",
  "hello",
];

export function sessionSecretProblem(secret: string | undefined): string | null {
  if (!secret) return `is not set; ${HOW}`;
  if (PLACEHOLDER.test(secret)) return `looks like a placeholder; ${HOW}`;
  const hex = HEX.test(secret);
  if (!hex && !BASE64.test(secret)) {
    return `must be 32 random bytes as hex or base64 (other characters found); ${HOW}`;
  }
  const room = hex ? secret.length >= MIN_HEX_DIGITS : secret.replace(/=+$/, "").length >= MIN_BASE64_CHARS;
  const least = `${MIN_HEX_DIGITS} hex digits or ${MIN_BASE64_CHARS} base64 characters`;
  if (!room) return `must be at least 32 random bytes (${least}); ${HOW}`;
  if (isRepetition(secret)) return `is a repeated pattern; ${HOW}`;
  const lower = secret.toLowerCase();
  const words = COMMON_WORDS.filter((word) => lower.includes(word));
  if (words.length >= 2) return `is made of words (${words.slice(0, 3).join(", ")}), not random bytes; ${HOW}`;
  const mixed = /[A-Z]/.test(secret) && /[a-z]/.test(secret) && /[0-9+/_-]/.test(secret);
  if (!hex && !mixed) return `does not look random (random base64 mixes cases and digits); ${HOW}`;
  if (shannonBitsPerChar(secret) < (hex ? 3 : 4)) return `has too little entropy (too few distinct characters); ${HOW}`;
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
