import { RateLimiterPrisma, RateLimiterRes } from "rate-limiter-flexible";
import { db } from "~/server/db";

/**
 * Failed sign-ins are counted per account and per client address in the
 * database (rate-limiter-flexible's Prisma store, table rate_limits), so the
 * limits hold across app instances and restarts. Only failures count; a
 * success clears the account's count, not the address's.
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

/** Seconds until another attempt is allowed, or 0 when it is allowed now. */
export async function secondsUntilAllowed({ email, address }: ThrottleKeys): Promise<number> {
  const [account, fromAddress] = await Promise.all([perAccount.get(email), address ? perAddress.get(address) : null]);
  const wait = (res: RateLimiterRes | null, points: number) =>
    res && res.consumedPoints >= points ? Math.max(1, Math.ceil(res.msBeforeNext / 1000)) : 0;
  return Math.max(wait(account, ACCOUNT_LIMIT.points), wait(fromAddress, ADDRESS_LIMIT.points));
}

/**
 * Counts a failure; true when it used up the last attempt (the lock-out starts now).
 * The store's upsert is a read then a write, so two first failures at once can
 * collide on the key (P2002); the second is simply retried.
 */
export async function recordFailure({ email, address }: ThrottleKeys): Promise<boolean> {
  const consume = async (limiter: RateLimiterPrisma, key: string): Promise<RateLimiterRes> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await limiter.consume(key);
      } catch (error) {
        if (error instanceof RateLimiterRes) return error; // already over the limit: a concurrent failure
        if (attempt > 0 || (error as { code?: string }).code !== "P2002") throw error;
      }
    }
  };
  const [account, fromAddress] = await Promise.all([
    consume(perAccount, email),
    address ? consume(perAddress, address) : null,
  ]);
  return account.consumedPoints === ACCOUNT_LIMIT.points || fromAddress?.consumedPoints === ADDRESS_LIMIT.points;
}

export async function recordSuccess({ email }: ThrottleKeys): Promise<void> {
  await perAccount.delete(email);
}
