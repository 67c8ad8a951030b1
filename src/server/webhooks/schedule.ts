import { env } from "~/env";

/**
 * When a failed delivery is tried again: exponential backoff with jitter. The n-th retry waits
 * WEBHOOK_RETRY_BASE_MS * 2^(n-1), at most WEBHOOK_RETRY_MAX_MS, then a random half of it is taken off (so that
 * many deliveries failing together do not come back together). With the defaults (10 s, 6 h) retries go on for
 * WEBHOOK_RETRY_FOR_MS (3 days) from the event: about 20 attempts.
 */
export function retryDelayMs(attempt: number, random = Math.random()): number {
  const full = Math.min(env.WEBHOOK_RETRY_MAX_MS, env.WEBHOOK_RETRY_BASE_MS * 2 ** Math.max(0, attempt - 1));
  return Math.round(full * (0.5 + random / 2));
}

/**
 * The next attempt after a failure, or null once the delivery is WEBHOOK_RETRY_FOR_MS old (it gives up). The last
 * attempt is at that age, however the backoff falls.
 */
export function nextAttemptAt(createdAt: Date, attempt: number, now = new Date()): Date | null {
  const end = createdAt.getTime() + env.WEBHOOK_RETRY_FOR_MS;
  if (now.getTime() >= end) return null;
  return new Date(Math.min(end, now.getTime() + retryDelayMs(attempt)));
}
