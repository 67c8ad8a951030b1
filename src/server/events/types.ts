/**
 * What a merchant is told happened to its money (Stripe's event names). Each is written in the transaction that
 * made the change it reports (write.ts), so an event exists exactly when its change does.
 */
export const EVENT_TYPES = [
  "charge.succeeded",
  "charge.failed",
  "refund.succeeded",
  "refund.failed",
  /** An operation nobody finished, which the gateway shows never happened: stored as "nothing was made". */
  "operation.written_off",
  /** A charge that landed after its operation was written off, found by the reconciliation and refunded whole. */
  "charge.late_healed",
  /** A refund that landed after its operation was written off, recorded as that operation's refund. */
  "refund.late_recorded",
  /** Sent to one endpoint on request (the dashboard's "send a test event"); no money moved. */
  "webhook.test",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const isEventType = (value: string): value is EventType => (EVENT_TYPES as readonly string[]).includes(value);

/** An event about to be written: what happened, to which client, and the object as the API shows it. */
export type EventDraft = {
  type: EventType;
  apiClientId: number;
  /** The object as GET would show it (charges/responses.ts, refunds/responses.ts), or the operation's outcome. */
  object: Record<string, unknown>;
  /** The charge it concerns (a refund's charge too): the charge's page lists its events. */
  chargeId: string | null;
  /** The operation behind it (its request record and key), when one is known. */
  requestId: bigint | null;
  idempotencyKey: string | null;
};
