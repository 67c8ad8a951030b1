/**
 * Charges with the project's SDK (@charges/client): it does what docs/retries.md asks of a client by itself. One
 * key per operation (made, or yours), retried on network errors, timeouts and the answers whose `retryable` is
 * true, after Retry-After, up to a deadline; a final answer is a result. test/retryClients.test.ts runs it.
 */
import { ChargesClient, type CreateChargeParams, OperationDeadlineError } from "@charges/client";

export function chargesApi(baseUrl: string, apiKey: string, opts: { timeoutMs?: number } = {}) {
  return new ChargesClient({
    baseUrl,
    apiKey,
    attemptTimeoutMs: opts.timeoutMs ?? 10_000,
    deadlineMs: 120_000, // then an OperationDeadlineError: settle it, never retry with a new key
  });
}

/** One operation: `key` made by the caller once (crypto.randomUUID()) and stored with the order. */
export async function createCharge(api: ChargesClient, body: CreateChargeParams, key: string) {
  try {
    return await api.createCharge(body, { idempotencyKey: key });
  } catch (error) {
    if (!(error instanceof OperationDeadlineError)) throw error;
    const found = await api.findByIdempotencyKey(key); // complete, in_progress or unknown: never a new key
    if (found.state === "complete") return found.result;
    throw error;
  }
}
