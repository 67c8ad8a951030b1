import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";

/**
 * Signing follows the Standard Webhooks specification through its reference package (`standardwebhooks`), so any
 * receiver library for the spec verifies what is sent: `webhook-id` (the event's id, the same on every attempt:
 * what receivers deduplicate by), `webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature`
 * (`v1,<base64 HMAC-SHA256>` for each secret that signs, space-separated).
 */
export const newSigningSecret = () => `whsec_${randomBytes(24).toString("base64")}`;

export type SigningKeys = { secret: string; previousSecret: string | null; previousSecretUntil: Date | null };

/** The secrets that sign now: the current one, and during a rotation's overlap the previous one too. */
export function signingSecrets(keys: SigningKeys, now = new Date()): string[] {
  const overlapping =
    keys.previousSecret !== null && keys.previousSecretUntil !== null && keys.previousSecretUntil > now;
  return overlapping ? [keys.secret, keys.previousSecret!] : [keys.secret];
}

export function signedHeaders(keys: SigningKeys, eventId: string, payload: string, now = new Date()) {
  const signature = signingSecrets(keys, now)
    .map((secret) => new Webhook(secret).sign(eventId, now, payload))
    .join(" ");
  return {
    "webhook-id": eventId,
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": signature,
  };
}
