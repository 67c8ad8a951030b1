import { createHash } from "node:crypto";

/**
 * The idempotency key sent to the payment gateway, derived from the client's key
 * so that every retry of one operation reaches the gateway under the same key
 * and a charge that got there is never made again, even after the app lost
 * track of it (crash, timeout, reaped record).
 *
 * Scoped by route and API client so two clients' keys never meet, and by the
 * request record's id so that a key reused after its 24 h lifetime (a new
 * operation, by Stripe's rules) is a new charge at the gateway too. A keyless
 * request's record has no key: its id alone makes its gateway key its own.
 *
 * Changing this function changes the key every in-flight operation reaches the
 * gateway under: a retry across the deploy would charge again. It is pinned by
 * test/unit/deriveGatewayKey.test.ts.
 */
export function deriveGatewayKey(request: {
  route: string;
  apiClientId: number;
  idempotencyKey: string | null;
  id: bigint;
}): string {
  const material = [
    "charges-gateway-key-v1",
    request.route,
    request.apiClientId,
    request.idempotencyKey ?? "",
    request.id,
  ].join("\n");
  return `gk_${createHash("sha256").update(material).digest("hex")}`;
}

/** What the gateway keeps beside each charge or refund, so the ledger can name the operation behind it. */
export function metadataFor(record: { id: bigint; apiClientId: number; idempotencyKey: string | null }) {
  return {
    requestId: String(record.id),
    apiClientId: String(record.apiClientId),
    idempotencyKey: record.idempotencyKey,
  };
}
