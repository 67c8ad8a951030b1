import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";
import { env } from "~/env";

/**
 * Staff passwords, hashed with scrypt (memory-hard, in Node's crypto):
 *   scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>
 * The parameters travel with the hash, so they can be raised: a hash made with
 * weaker ones is replaced at the next successful sign-in (needsRehash).
 * OWASP's minimum for scrypt is N=2^17, r=8, p=1 (128 MiB, ~0.4 s here): PASSWORD_SCRYPT_LOG2_N, lower in tests only.
 */
export const PASSWORD_PARAMS = { N: 2 ** env.PASSWORD_SCRYPT_LOG2_N, r: 8, p: 1 };
const KEY_LENGTH = 32;
/** Long enough for any passphrase, short enough that nobody makes us hash a megabyte. */
export const MAX_PASSWORD_LENGTH = 1024;
export const MIN_PASSWORD_LENGTH = 12;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  const maxmem = 256 * 1024 * 1024;
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LENGTH, { ...options, maxmem }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string, params = PASSWORD_PARAMS): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, params);
  return ["scrypt", params.N, params.r, params.p, salt.toString("base64"), hash.toString("base64")].join("$");
}

function parse(stored: string) {
  const [scheme, N, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return null;
  return {
    N: Number(N),
    r: Number(r),
    p: Number(p),
    salt: Buffer.from(salt, "base64"),
    hash: Buffer.from(hash, "base64"),
  };
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) return false;
  const actual = await derive(password, parsed.salt, parsed);
  return actual.length === parsed.hash.length && timingSafeEqual(actual, parsed.hash);
}

/** True when the hash was made with weaker parameters than today's. */
export function needsRehash(stored: string): boolean {
  const parsed = parse(stored);
  return !parsed || parsed.N < PASSWORD_PARAMS.N || parsed.r < PASSWORD_PARAMS.r || parsed.p < PASSWORD_PARAMS.p;
}

let dummyHash: Promise<string> | undefined;
/** Made at boot, so that the first unknown e-mail is not the one slow answer. */
export function prepareDummyHash(): Promise<string> {
  dummyHash ??= hashPassword(randomBytes(16).toString("hex"));
  return dummyHash;
}

/**
 * Costs what checking a real password costs, and is always false: for unknown
 * e-mails, so the answer's timing does not tell which accounts exist.
 */
export async function verifyAgainstDummy(password: string): Promise<false> {
  await verifyPassword(password, await prepareDummyHash());
  return false;
}
