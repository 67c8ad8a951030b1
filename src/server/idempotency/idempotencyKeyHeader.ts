export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const MAX_KEY_LENGTH = 64;

export type ParsedKeyHeader = { kind: "absent" } | { kind: "valid"; key: string } | { kind: "invalid"; reason: string };

const PRINTABLE_ASCII = /^[\x20-\x7E]+$/;

/**
 * Reads the Idempotency-Key header. The IETF draft writes the key as a
 * structured-field string ("..."); clients such as Stripe's send it bare. Both
 * are accepted and mean the same key.
 */
export function parseIdempotencyKeyHeader(value: string | null): ParsedKeyHeader {
  if (value === null) return { kind: "absent" };
  let key = value.trim();
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) key = key.slice(1, -1);
  if (key.length === 0) return { kind: "invalid", reason: "Idempotency-Key must not be empty" };
  if (key.length > MAX_KEY_LENGTH) {
    return { kind: "invalid", reason: `Idempotency-Key must be at most ${MAX_KEY_LENGTH} characters (got ${key.length})` };
  }
  if (!PRINTABLE_ASCII.test(key)) return { kind: "invalid", reason: "Idempotency-Key must contain printable ASCII characters only" };
  return { kind: "valid", key };
}
