import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { db, queryRows } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { newEventId, utcDatetime } from "~/server/events/ids";

/**
 * What the dashboard shows of deliveries and does with them: each delivery of an endpoint or of an event, its
 * attempts with their answers, the next retry; "send again" and a test event, both audited.
 */
export type DeliveryView = {
  id: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  url: string | null;
  state: string;
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
};

const DELIVERY_COLUMNS = `CAST(d.id AS CHAR) AS id, d.event_id AS eventId, ev.type AS eventType,
  d.endpoint_id AS endpointId, w.url, d.state, d.attempts,
  IF(d.state = 'pending', d.next_attempt_at, NULL) AS nextAttemptAt,
  d.last_status AS lastStatus, d.last_error AS lastError, d.created_at AS createdAt, d.delivered_at AS deliveredAt`;

const FROM = `FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id
  LEFT JOIN webhook_endpoints w ON w.id = d.endpoint_id`;

export const deliveriesOfEndpoint = (endpointId: string, limit = 50) =>
  queryRows<DeliveryView>({
    sql: `SELECT ${DELIVERY_COLUMNS} ${FROM} WHERE d.endpoint_id = ? ORDER BY d.created_at DESC, d.id DESC LIMIT ?`,
    values: [endpointId, limit],
  });

export const deliveriesOfEvent = (eventId: string) =>
  queryRows<DeliveryView>({
    sql: `SELECT ${DELIVERY_COLUMNS} ${FROM} WHERE d.event_id = ? ORDER BY d.id`,
    values: [eventId],
  });

export type AttemptView = {
  attempt: number;
  manual: number;
  startedAt: Date;
  durationMs: number;
  status: number | null;
  error: string | null;
  responseBody: string | null;
};

export const attemptsOfDelivery = (deliveryId: bigint) =>
  queryRows<AttemptView>({
    sql: `SELECT attempt, manual, started_at AS startedAt, duration_ms AS durationMs, status, error,
                 response_body AS responseBody
            FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt DESC, id DESC LIMIT 100`,
    values: [deliveryId],
  });

/** The events of a charge (its refunds' too) or of an operation's request record, oldest first. */
export const eventsWhere = (where: { chargeId: string } | { requestId: bigint }) =>
  db.event.findMany({
    where,
    orderBy: { seq: "asc" },
    take: 100,
    select: { id: true, type: true, createdAt: true, chargeId: true, requestId: true },
  });

/**
 * Posts a delivery again as soon as a dispatcher is free: made pending and due now, whatever it came to before
 * (delivered, failed, cancelled). It keeps its event id, so a receiver that already has it deduplicates it.
 */
export async function sendAgain(deliveryId: bigint, audit: AuditContext) {
  const delivery = await db.webhookDelivery.findUnique({ where: { id: deliveryId } });
  if (!delivery) throw new DomainError("not_found", `There is no delivery ${deliveryId}.`);
  const endpoint = await db.webhookEndpoint.findUnique({ where: { id: delivery.endpointId } });
  if (!endpoint) throw new DomainError("conflict", "Its endpoint was deleted.");
  if (!endpoint.enabled) throw new DomainError("conflict", "Its endpoint is disabled: enable it first.");
  await db.webhookDelivery.update({
    where: { id: deliveryId },
    data: { state: "pending", nextAttemptAt: new Date() },
  });
  await recordAudit(audit, {
    action: "webhook_delivery.sent_again",
    target: { type: "webhook_delivery", id: String(deliveryId) },
    details: { event: delivery.eventId, endpoint: delivery.endpointId, was: delivery.state },
  });
}

/** A webhook.test event to this endpoint only (its client's event list shows it too). */
export async function sendTestEvent(endpointId: string, audit: AuditContext): Promise<string> {
  const endpoint = await db.webhookEndpoint.findUnique({ where: { id: endpointId } });
  if (!endpoint) throw new DomainError("not_found", `There is no webhook endpoint ${endpointId}.`);
  const id = newEventId();
  const now = new Date();
  const object = { object: "webhook_endpoint", id: endpoint.id, url: endpoint.url };
  await db.$transaction([
    db.$executeRawUnsafe(
      `INSERT INTO events (id, api_client_id, type, data, object_id, created_at)
       VALUES (?, ?, 'webhook.test', ?, ?, ?)`,
      id,
      endpoint.apiClientId,
      JSON.stringify(object),
      endpoint.id,
      utcDatetime(now),
    ),
    db.$executeRawUnsafe(
      `INSERT INTO webhook_deliveries (event_id, endpoint_id, api_client_id, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, ?)`,
      id,
      endpoint.id,
      endpoint.apiClientId,
      utcDatetime(now),
      utcDatetime(now),
    ),
  ]);
  await recordAudit(audit, {
    action: "webhook_endpoint.test_sent",
    target: { type: "webhook_endpoint", id: endpoint.id },
    details: { event: id },
  });
  return id;
}
