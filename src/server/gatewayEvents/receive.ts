import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { db } from "~/server/db";
import type { GatewayEvent } from "~/server/gateway";
import { finishUnfinished } from "~/server/idempotency";
import { findRecord } from "~/server/idempotency/reading";
import { settleRecord } from "~/server/moneyRoutes";
import { log } from "~/server/observability/log";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";

/**
 * What receiving one gateway event came to:
 * - settled: it named an unfinished operation, which is now final (what the gateway says, asked again: the event
 *   only says when to ask, so a stale or out-of-order one cannot make an answer untrue);
 * - already_final / not_ours: nothing to do (finished before, or no operation of ours by that name);
 * - duplicate: this event id was acted on before;
 * - in_flight / not_yet_known: a request is finishing it right now, or the gateway cannot tell yet: the gateway
 *   should send it again (it does, with backoff), and nothing was kept of this delivery.
 */
export type Receipt = "settled" | "already_final" | "not_ours" | "duplicate" | "in_flight" | "not_yet_known";

/** The money route each event type speaks of. */
const ROUTE_OF: Record<string, string> = {
  "payment_intent.succeeded": CHARGES_ROUTE,
  "payment_intent.payment_failed": CHARGES_ROUTE,
  "refund.created": REFUNDS_ROUTE,
  "refund.updated": REFUNDS_ROUTE,
  "refund.failed": REFUNDS_ROUTE,
};

/**
 * Acts on an event the gateway signed (gateway/events.ts), at most once per event id that came to something
 * final. Acting twice would be harmless (finishing an operation is fenced, as a retry is); the receipt saves the
 * work and says, in the table, what each event did.
 */
export async function receiveGatewayEvent(event: GatewayEvent): Promise<Receipt> {
  if (await db.gatewayEvent.findUnique({ where: { id: event.id }, select: { id: true } })) return "duplicate";
  const { outcome, recordId } = await actOn(event);
  if (outcome === "in_flight" || outcome === "not_yet_known") return outcome;
  // INSERT IGNORE: two deliveries of one event at once both acted (fenced); one receipt stays.
  await db.gatewayEvent.createMany({
    data: [{ id: event.id, type: event.type, idempotentRequestId: recordId, outcome }],
    skipDuplicates: true,
  });
  if (outcome === "settled")
    log.info({ event: event.id, type: event.type, recordId: String(recordId) }, "gateway event settled an operation");
  return outcome;
}

async function actOn(event: GatewayEvent): Promise<{ outcome: Receipt; recordId: bigint | null }> {
  const route = ROUTE_OF[event.type];
  const { metadata } = event;
  const id = /^\d{1,19}$/.test(metadata.request_id ?? "") ? BigInt(metadata.request_id!) : null;
  if (!route || id === null) return { outcome: "not_ours", recordId: null };
  const record = await findRecord(id);
  // The operation the gateway's object was made for: same route, same API client.
  if (!record || record.route !== route || String(record.apiClientId) !== metadata.api_client_id) {
    return { outcome: "not_ours", recordId: null };
  }
  if (record.phase.name === "complete") return { outcome: "already_final", recordId: id };
  if (record.phase.name === "held") return { outcome: "in_flight", recordId: id };
  const result = await finishUnfinished(record, settleRecord);
  switch (result.kind) {
    case "finished":
      return { outcome: "settled", recordId: id };
    case "unproven":
      return { outcome: "not_yet_known", recordId: id };
    case "lost":
      return { outcome: "in_flight", recordId: id };
  }
}
