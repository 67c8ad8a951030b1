/**
 * Charges with axios and axios-retry, configured for this API (docs/retries.md). One Idempotency-Key per
 * operation, made once by the caller and sent on every attempt: axios-retry resends the same config, headers and
 * body. Retried: network errors, per-attempt timeouts, 409 (in flight) and 503 (could not tell), after
 * Retry-After. Every other answer is final and returned, the one final 500 (a replayed request_abandoned)
 * included: read `error.retryable`. test/retryClients.test.ts runs it against the real server.
 */
import axios, { type AxiosError, isAxiosError } from "axios";
import axiosRetry, { isNetworkError, retryAfter } from "axios-retry";

/** Only "in flight, retry later" (409) and "could not tell" (503) are retried by status. */
const RETRY_LATER = [409, 503];
const isTimeout = (error: AxiosError) => error.code === "ECONNABORTED" || error.code === "ETIMEDOUT";

export function chargesApi(baseUrl: string, apiKey: string, opts: { timeoutMs?: number; onRetry?: () => void } = {}) {
  const api = axios.create({
    baseURL: baseUrl,
    headers: { Authorization: `Bearer ${apiKey}` },
    timeout: opts.timeoutMs ?? 10_000,
    // Rejected answers are the ones axios-retry may retry; any other is the operation's answer, returned.
    validateStatus: (status) => !RETRY_LATER.includes(status),
  });
  axiosRetry(api, {
    retries: 60, // with Retry-After: 2, about two minutes
    // axios-retry's default leaves POST and timeouts out, and retries every 5xx (a final 500 too).
    retryCondition: (error) =>
      isNetworkError(error) || isTimeout(error) || RETRY_LATER.includes(error.response?.status ?? 0),
    // Retry-After when the server says it, else backoff with full jitter up to 5 s.
    retryDelay: (retryCount, error) =>
      Math.max(retryAfter(error), Math.random() * Math.min(5_000, 250 * 2 ** retryCount)),
    shouldResetTimeout: true, // the timeout is per attempt
    onRetry: () => opts.onRetry?.(),
  });
  return api;
}

/** One operation: `key` made by the caller once (crypto.randomUUID()) and stored with the order. */
export async function createCharge(api: ReturnType<typeof chargesApi>, body: object, key: string) {
  try {
    return await api.post("/api/charges", body, { headers: { "Idempotency-Key": key } });
  } catch (error) {
    // Out of retries while still "retry later": the last answer. A timeout or network error is thrown:
    // no answer, so settle with GET /api/charges?idempotency_key=<key>, or send again with the same key.
    if (isAxiosError(error) && error.response) return error.response;
    throw error;
  }
}
