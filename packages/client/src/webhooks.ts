/**
 * Verifying a webhook from the Charges API (Node only: node:crypto), @charges/client/webhooks. Deliveries follow
 * the Standard Webhooks specification (https://www.standardwebhooks.com), signed by the server with the spec's
 * reference package; this is the spec's verification, written out so that the client keeps no dependencies (the
 * server's tests check it against what the reference package signed):
 *
 * - the signed content is `${webhook-id}.${webhook-timestamp}.${body}`, HMAC-SHA256 with the secret's bytes
 *   (the base64 after `whsec_`), sent as `v1,<base64>`; `webhook-signature` may hold several, space-separated
 *   (during a secret rotation both secrets sign), and one match is enough;
 * - a timestamp more than 5 minutes from now is refused (a replayed old delivery);
 * - compared in constant time.
 *
 * Pass the body exactly as received (the raw bytes or text, not re-serialized JSON). Deduplicate by the event's
 * id (the `webhook-id`): an event may be delivered more than once (README: the receiver recipe).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Event } from "./lists.js";

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

/** What a delivery carries: an event, as GET /api/events/{id} shows it. */
export type WebhookEvent = Event;

const TOLERANCE_SECONDS = 5 * 60;

type Headers = Record<string, string | string[] | undefined> | { get(name: string): string | null };

function header(headers: Headers, name: string): string {
  const value =
    typeof (headers as { get?: unknown }).get === "function"
      ? (headers as { get(name: string): string | null }).get(name)
      : (headers as Record<string, string | string[] | undefined>)[name];
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) throw new WebhookVerificationError(`missing ${name} header`);
  return text;
}

/**
 * The event, once its signature is verified with `secret` (`whsec_...`, shown when the endpoint was made or its
 * secret rotated); throws WebhookVerificationError otherwise. `headers`: a Fetch Headers, or node's
 * IncomingHttpHeaders (lower-case names).
 */
export function verifyWebhook(
  body: string | Uint8Array,
  headers: Headers,
  secret: string,
  now: Date = new Date(),
): WebhookEvent {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  const seconds = Number(timestamp);
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError("invalid webhook-timestamp");
  if (Math.abs(now.getTime() / 1000 - seconds) > TOLERANCE_SECONDS)
    throw new WebhookVerificationError("webhook-timestamp too far from now");
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
  const text = typeof body === "string" ? body : Buffer.from(body).toString("utf8");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${text}`).digest();
  const matches = signatures.split(" ").some((entry) => {
    const [version, signature] = entry.split(",");
    if (version !== "v1" || !signature) return false;
    const given = Buffer.from(signature, "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError("no matching signature");
  const event = JSON.parse(text) as WebhookEvent;
  if (event.id !== id) throw new WebhookVerificationError("webhook-id does not name the event");
  return event;
}
