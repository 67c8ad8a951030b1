import Stripe from "stripe";
import { env } from "~/env";

/** What the app reads of a gateway's webhook event: which operation it speaks of is in the object's metadata. */
export type GatewayEvent = { id: string; type: string; metadata: Record<string, string> };

/**
 * The event in `payload` if `signature` (its Stripe-Signature header) proves the gateway sent it with
 * GATEWAY_WEBHOOK_SECRET within the last 5 minutes (the official SDK's check, for Stripe and the simulator alike:
 * a forged or late-replayed event fails it); null otherwise.
 */
export function verifyGatewayEvent(payload: string | Buffer, signature: string | null): GatewayEvent | null {
  if (!env.GATEWAY_WEBHOOK_SECRET || !signature) return null;
  let event: Stripe.Event;
  try {
    event = Stripe.webhooks.constructEvent(payload, signature, env.GATEWAY_WEBHOOK_SECRET);
  } catch {
    return null;
  }
  const object = event.data.object as { metadata?: Record<string, string> | null };
  return { id: event.id, type: event.type, metadata: object.metadata ?? {} };
}

/** Whether this deployment takes gateway events at all. */
export const takesGatewayEvents = () => env.GATEWAY_WEBHOOK_SECRET !== undefined;
