import { createHash } from "node:crypto";
import { RateLimiterPrisma, RateLimiterRes } from "rate-limiter-flexible";
import { db } from "~/server/db";

/**
 * Failed sign-ins, counted in the database (rate-limiter-flexible's Prisma
 * store, table rate_limits) so the limits hold across app instances and
 * restarts. Designed so that nobody but the owner can keep the owner out:
 *
 * - per (account, address): 5 failures per 15 minutes, then that pair waits;
 * - per address: 20 failures an hour over any accounts (password spraying);
 * - per account, from every address: at most 100 failures a day, and after 10
 *   a growing delay (2 s, 4 s, 8 s... up to 15 minutes) before the next try;
 * - both account-wide limits only refuse addresses the account has not
 *   completed a sign-in from in the last 90 days ("known" addresses), so
 *   strangers' failures never lock the owner out at their usual address.
 *
 * Every attempt takes its points before the password is checked, so a burst of
 * parallel guesses is bounded too; a success gives them back. Unknown e-mails
 * are counted like known ones: a lock-out only real accounts get would tell
 * which accounts exist. Keys are hashed: an e-mail plus an address can outgrow
 * the key column.
 */
export const PAIR_LIMIT = { points: 5, duration: 15 * 60 };
export const ADDRESS_LIMIT = { points: 20, duration: 60 * 60 };
export const ACCOUNT_DAILY_LIMIT = { points: 100, duration: 24 * 60 * 60 };
/** Failures a day an account takes before each further one delays strangers' next try. */
export const DELAY_AFTER = 10;
export const MAX_DELAY_SECONDS = 15 * 60;
const KNOWN_ADDRESS_DAYS = 90;

const store = { storeClient: db, tableName: "rateLimit" };
const perPair = new RateLimiterPrisma({ ...store, keyPrefix: "login_pair", ...PAIR_LIMIT });
const perAddress = new RateLimiterPrisma({ ...store, keyPrefix: "login_address", ...ADDRESS_LIMIT });
const perAccountDay = new RateLimiterPrisma({ ...store, keyPrefix: "login_account_day", ...ACCOUNT_DAILY_LIMIT });
/** Blocked (by `block`) while the growing delay runs; its points are never consumed. */
const accountDelay = new RateLimiterPrisma({ ...store, keyPrefix: "login_delay", points: 1, duration: 1 });
/** A row per (account, address) that completed a sign-in: the owner's usual places. */
const knownAddresses = new RateLimiterPrisma({
  ...store,
  keyPrefix: "login_known",
  points: 1,
  duration: KNOWN_ADDRESS_DAYS * 24 * 60 * 60,
});

export type ThrottleKeys = { email: string; address: string | null };

const hash = (...parts: string[]) => createHash("sha256").update(parts.join("\n")).digest("hex");
const accountKey = (keys: ThrottleKeys) => hash(keys.email);
const pairKey = (keys: ThrottleKeys) => hash(keys.email, keys.address ?? "");

/** The rate_limits row that counts an account's failures of the day (tests seed it). */
export const dailyFailuresRow = (email: string) => perAccountDay.getKey(hash(email));

export type Attempt = {
  retryAfterSeconds: number;
  /** This attempt used the last one of a limit (if it fails, the refusals start now). */
  lastOne: boolean;
  /** The account's failures of the day, this attempt included. */
  dailyCount: number;
};

const refusal = (res: RateLimiterRes): Attempt => ({
  retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
  lastOne: false,
  dailyCount: 0,
});

/**
 * Takes a point; `refused` when none was left. The store's upsert is a read then
 * a write, so two first attempts at once can collide on the key (P2002); the
 * second is simply retried.
 */
export async function take(limiter: RateLimiterPrisma, key: string) {
  for (let attempt = 0; ; attempt++) {
    try {
      return { res: await limiter.consume(key), refused: false };
    } catch (error) {
      if (error instanceof RateLimiterRes) return { res: error, refused: true };
      if (attempt > 0 || (error as { code?: string }).code !== "P2002") throw error;
    }
  }
}

const isKnown = async (keys: ThrottleKeys) =>
  keys.address !== null && (await knownAddresses.get(pairKey(keys))) !== null;

/**
 * Takes one attempt from the pair's, the address's and the account's allowance
 * before the password is checked. `retryAfterSeconds` > 0: refuse.
 */
export async function takeAttempt(keys: ThrottleKeys): Promise<Attempt> {
  const known = await isKnown(keys);
  if (!known) {
    const delay = await accountDelay.get(accountKey(keys));
    if (delay && delay.consumedPoints > 1 && delay.msBeforeNext > 0) return refusal(delay);
  }
  const [pair, fromAddress] = await Promise.all([
    take(perPair, pairKey(keys)),
    keys.address ? take(perAddress, keys.address) : null,
  ]);
  const refused = [pair, fromAddress].filter((t) => t?.refused).map((t) => t!.res);
  if (refused.length > 0) return refusal(refused.sort((a, b) => b.msBeforeNext - a.msBeforeNext)[0]!);
  const daily = await take(perAccountDay, accountKey(keys));
  if (daily.refused && !known) return refusal(daily.res);
  return {
    retryAfterSeconds: 0,
    lastOne:
      pair.res.consumedPoints === PAIR_LIMIT.points ||
      fromAddress?.res.consumedPoints === ADDRESS_LIMIT.points ||
      daily.res.consumedPoints === ACCOUNT_DAILY_LIMIT.points,
    dailyCount: daily.res.consumedPoints,
  };
}

/** The delay strangers wait after the account's `dailyCount`th failure of the day (0: none yet). */
export const delayAfterFailure = (dailyCount: number) =>
  dailyCount <= DELAY_AFTER ? 0 : Math.min(2 ** (dailyCount - DELAY_AFTER), MAX_DELAY_SECONDS);

/** After a wrong password or code: starts the account's growing delay once past DELAY_AFTER. */
export async function attemptFailed(keys: ThrottleKeys, attempt: Attempt): Promise<void> {
  const seconds = delayAfterFailure(attempt.dailyCount);
  if (seconds > 0) await accountDelay.block(accountKey(keys), seconds);
}

/**
 * A completed sign-in: clears the pair's count, gives the address and the
 * account their point back and remembers the address as the owner's. The
 * account's daily count otherwise stays: it bounds guessing per day, whoever
 * signs in meanwhile.
 */
export async function attemptSucceeded(keys: ThrottleKeys): Promise<void> {
  await Promise.all([
    perPair.delete(pairKey(keys)),
    keys.address ? perAddress.reward(keys.address, 1) : null,
    perAccountDay.reward(accountKey(keys), 1),
    keys.address ? knownAddresses.set(pairKey(keys), 1, KNOWN_ADDRESS_DAYS * 24 * 60 * 60) : null,
  ]);
}
