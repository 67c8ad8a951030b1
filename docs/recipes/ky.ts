/**
 * Charges with ky, configured for this API (docs/retries.md). One Idempotency-Key per operation, made once by the
 * caller and sent on every attempt: ky resends the same request, headers and body. Retried: network errors,
 * per-attempt timeouts, 409 (in flight) and 503 (could not tell), after Retry-After. Every other answer is final
 * and returned as it is, the one final 500 (a replayed request_abandoned) included: read `error.retryable`.
 * test/retryClients.test.ts runs it against the real server.
 */
import ky, { HTTPError } from "ky";

/** Only "in flight, retry later" (409) and "could not tell" (503) are retried by status. */
const RETRY_LATER = [409, 503];

export function chargesApi(baseUrl: string, apiKey: string, opts: { timeoutMs?: number; onRetry?: () => void } = {}) {
  return ky.create({
    prefixUrl: baseUrl,
    headers: { Authorization: `Bearer ${apiKey}` },
    timeout: opts.timeoutMs ?? 10_000, // per attempt
    // A thrown answer is one ky may retry; any other is the operation's answer, returned.
    throwHttpErrors: (status) => RETRY_LATER.includes(status),
    retry: {
      limit: 60, // with Retry-After: 2, about two minutes
      methods: ["get", "post"], // POST carries its key: safe to resend (ky's default leaves POST out)
      statusCodes: RETRY_LATER, // not 500 (ky's default retries it): a replayed request_abandoned is final
      afterStatusCodes: RETRY_LATER, // wait Retry-After...
      maxRetryAfter: 30_000, // ...even past the timeout (ky's default cap)
      retryOnTimeout: true, // the attempt may have been carried out: resend it, same key
      backoffLimit: 5_000,
      jitter: true,
    },
    hooks: { beforeRetry: [() => opts.onRetry?.()] },
  });
}

/** One operation: `key` made by the caller once (crypto.randomUUID()) and stored with the order. */
export async function createCharge(api: ReturnType<typeof chargesApi>, body: object, key: string) {
  try {
    return await api.post("api/charges", { json: body, headers: { "Idempotency-Key": key } });
  } catch (error) {
    // Out of retries while still "retry later": the last answer. A timeout or network error is thrown:
    // no answer, so settle with GET /api/charges?idempotency_key=<key>, or send again with the same key.
    if (error instanceof HTTPError) return error.response;
    throw error;
  }
}
