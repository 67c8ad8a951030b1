import { RateLimiterPrisma, RateLimiterRes } from "rate-limiter-flexible";
import { db } from "~/server/db";

/**
 * Failed sign-ins are counted per account and per client address in the
 * database (rate-limiter-flexible's Prisma store, table rate_limits), so the
 * limits hold across app instances and restarts. Every attempt takes one
 * point first; a success clears the account's count and gives the address its
 * point back, so only failures stay counted.
 *
 * Unknown e-mails are counted like known ones: a lock-out that only real
 * accounts get would tell which accounts exist.
 */
export const ACCOUNT_LIMIT = { points: 5, duration: 15 * 60 };
export const ADDRESS_LIMIT = { points: 20, duration: 60 * 60 };

const store = { storeClient: db, tableName: "rateLimit" };
const perAccount = new RateLimiterPrisma({ ...store, keyPrefix: "login_account", ...ACCOUNT_LIMIT });
const perAddress = new RateLimiterPrisma({ ...store, keyPrefix: "login_address", ...ADDRESS_LIMIT });

export type ThrottleKeys = { email: string; address: string | null };

export type Attempt = { retryAfterSeconds: number; lastOne: boolean };

/**
 * Takes one attempt from the account's and the address's allowance before the
 * password is checked, so that a burst of parallel attempts is bounded too.
 * `retryAfterSeconds` > 0: none was left, refuse. `lastOne`: this attempt used
 * the last one (if it fails, the lock-out starts now).
 * The store's upsert is a read then a write, so two first attempts at once can
 * collide on the key (P2002); the second is simply retried.
 */
export async function takeAttempt({ email, address }: ThrottleKeys): Promise<Attempt> {
  const take = async (limiter: RateLimiterPrisma, key: string) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return { res: await limiter.consume(key), refused: false };
      } catch (error) {
        if (error instanceof RateLimiterRes) return { res: error, refused: true };
        if (attempt > 0 || (error as { code?: string }).code !== "P2002") throw error;
      }
    }
  };
  const [account, fromAddress] = await Promise.all([
    take(perAccount, email),
    address ? take(perAddress, address) : null,
  ]);
  const refused = [account, fromAddress].filter((t) => t?.refused);
  return {
    retryAfterSeconds: Math.max(0, ...refused.map((t) => Math.max(1, Math.ceil(t!.res.msBeforeNext / 1000)))),
    lastOne:
      account.res.consumedPoints === ACCOUNT_LIMIT.points || fromAddress?.res.consumedPoints === ADDRESS_LIMIT.points,
  };
}

/** A success clears the account's count and gives the address its attempt back. */
export async function attemptSucceeded({ email, address }: ThrottleKeys): Promise<void> {
  await Promise.all([perAccount.delete(email), address ? perAddress.reward(address, 1) : null]);
}
