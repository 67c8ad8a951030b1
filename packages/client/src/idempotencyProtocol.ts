/**
 * The wire names and the key rule that the server and the SDK share: the server imports it from the SDK's
 * package (`@charges/client/idempotencyProtocol`). No imports, like errorRegistry.ts.
 */

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

/**
 * Marks an answer as the stored outcome of an earlier request with the same key: the
 * design's name, and Stripe's (`Idempotent-Replayed`), so tooling built for either sees it.
 */
export const REPLAY_HEADERS = { "Idempotent-Replay": "true", "Idempotent-Replayed": "true" } as const;

export const MAX_KEY_LENGTH = 64;

const PRINTABLE_ASCII = /^[\x20-\x7E]*$/;

/** Why `key` (already unquoted) cannot be an idempotency key, or undefined when it can. */
export function keyProblem(key: string): string | undefined {
  if (key.length === 0) return "Idempotency-Key must not be empty";
  if (key.length > MAX_KEY_LENGTH) {
    return `Idempotency-Key must be at most ${MAX_KEY_LENGTH} characters (got ${key.length})`;
  }
  if (!PRINTABLE_ASCII.test(key)) return "Idempotency-Key must contain printable ASCII characters only";
  return undefined;
}

/** The key as an RFC 9651 sf-string, the form the draft specifies (`"..."`, with `\` and `"` escaped). */
export function serializeKey(key: string): string {
  return `"${key.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
