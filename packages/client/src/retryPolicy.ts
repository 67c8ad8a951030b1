/**
 * The SDK's retry decisions, as pure functions (tested without a server in test/unit/).
 * What is worth retrying comes from the server's error registry, the one list of codes.
 */
import { API_ERRORS, isApiErrorCode, RETRYABLE_STATUSES_WITHOUT_CODE } from "./errorRegistry.js";

/** `retryable`: what the error body says (every error body of the server says it); absent from a proxy's page. */
export type Answer = { status: number; code: string | undefined; replayed: boolean; retryable?: unknown };

/**
 * True when the answer says "not decided yet, ask again with the same key": in flight (409), the gateway or
 * the service could not tell (503), an internal error (500), or a proxy's 502/504. A replay is always final:
 * `Idempotent-Replay: true` marks a stored outcome, for example 500 `request_abandoned`. The body's own
 * `retryable` decides a code this SDK does not know yet (a newer server's); the registry, one it knows.
 */
export function isRetryable({ status, code, replayed, retryable }: Answer): boolean {
  if (replayed) return false;
  if (isApiErrorCode(code)) return API_ERRORS[code].action === "retry";
  if (typeof retryable === "boolean") return retryable;
  return RETRYABLE_STATUSES_WITHOUT_CODE.includes(status);
}

/**
 * `Retry-After` in milliseconds from `now`: delay-seconds or an HTTP date
 * (RFC 9110 §10.2.3); 0 if absent or invalid.
 */
export function retryAfterMs(value: string | null, now = Date.now()): number {
  if (!value) return 0;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? 0 : Math.max(0, date - now);
}

/** The seconds of `wait=N` in a `Preference-Applied` header (RFC 7240), or undefined when the server did not wait. */
export function appliedWaitSeconds(value: string | null): number | undefined {
  const match = value?.match(/(?:^|[,;\s])wait\s*=\s*"?(\d+)"?/i);
  return match ? Number(match[1]) : undefined;
}

/**
 * The `wait=N` to ask for: at most what the caller allows, and at least a second shorter than the attempt
 * may take, so the server answers before the client gives up on the attempt. 0 means do not ask.
 */
export function preferWaitSeconds(wantedSeconds: number, attemptBudgetMs: number): number {
  return Math.max(0, Math.min(Math.floor(wantedSeconds), Math.floor(attemptBudgetMs / 1000) - 1));
}

/** Exponential backoff with full jitter: uniform in [0, min(max, base * 2^(n-1))]. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random = Math.random): number {
  return random() * Math.min(maxMs, baseMs * 2 ** (attempt - 1));
}

/**
 * How long to wait before the next attempt. Retry-After is a floor. When the server already waited for the
 * outcome (Preference-Applied) it paced the client itself: no backoff on top.
 */
export function nextDelayMs(opts: {
  attempt: number;
  retryAfterMs: number;
  serverWaited: boolean;
  baseMs: number;
  maxMs: number;
}): number {
  if (opts.serverWaited) return opts.retryAfterMs;
  return Math.max(opts.retryAfterMs, backoffMs(opts.attempt, opts.baseMs, opts.maxMs));
}
