/**
 * A request's page: what was asked (its stored fields, never a card token),
 * the answer stored, the charge, and the timeline of its key: the events the
 * idempotency module noted (claim, 409s, replays, reuse attempts, releases,
 * take-overs, completion), completed from the record itself where an event
 * was lost (a crash loses the last second of them) or predates them.
 */
import { env } from "~/env";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { decodeRecord, keyToBytes } from "~/server/idempotency/reading";
import { openMismatchesOf } from "~/server/ledger/mismatches";
import { diffFields, parseFields } from "./fieldDiff";
import { summarise } from "./log";
import { eventCounts, eventsOf, type EventKind, type TimelineEvent } from "./timeline";

export type TimelineEntry = Omit<TimelineEvent, "apiClientId"> & {
  /** The client whose request it was, when it is not the record's (a cross-client reuse attempt). */
  otherClient: { id: number; name: string } | null;
  /** True for an entry read from the record because no event of it was written. */
  fromRecord: boolean;
};

export async function requestDetail(id: bigint) {
  const row = await db.idempotentRequest.findUnique({ where: { id }, include: { charge: true, refund: true } });
  if (!row) throw new DomainError("not_found", `There is no request record ${id}: it never existed, or it expired.`);
  const now = new Date();
  const record = decodeRecord(row, now);
  const [[summary], { events, truncated }, counts, reuseRows, openMismatches] = await Promise.all([
    summarise([{ ...record, customerId: row.customerId }]),
    eventsOf(record),
    eventCounts(record),
    record.idempotencyKey === null
      ? []
      : db.keyReuseAttempt.findMany({
          where: {
            idempotencyKey: keyToBytes(record.idempotencyKey),
            route: record.route,
            createdAt: { gte: record.createdAt },
          },
          orderBy: { id: "desc" },
          take: 50,
        }),
    openMismatchesOf({
      requestIds: [row.id],
      chargeIds: row.charge ? [row.charge.id] : [],
      gatewayChargeIds: row.charge ? [row.charge.gatewayChargeId] : [],
    }),
  ]);
  const clientIds = [...new Set([...events.map((e) => e.apiClientId), ...reuseRows.map((r) => r.apiClientId)])];
  const clients = await db.apiClient.findMany({ where: { id: { in: clientIds } }, select: { id: true, name: true } });
  const clientOf = new Map(clients.map((c) => [c.id, c]));
  const other = (clientId: number) =>
    clientId === record.apiClientId ? null : (clientOf.get(clientId) ?? { id: clientId, name: `client ${clientId}` });

  const timeline: TimelineEntry[] = events.map(({ apiClientId, ...e }) => ({
    ...e,
    otherClient: other(apiClientId),
    fromRecord: false,
  }));
  const has = (kind: EventKind) => events.some((e) => e.kind === kind && e.requestId === String(record.id));
  const fromRecord = (kind: EventKind, at: Date, detail: string | null): TimelineEntry => ({
    id: `record-${kind}`,
    at,
    kind,
    requestId: String(record.id),
    attempt: null,
    detail,
    instance: "not recorded",
    apiRequestId:
      kind === "completed" && record.phase.name === "complete" ? (record.phase.response.requestId ?? null) : null,
    answer: null,
    otherClient: null,
    fromRecord: true,
  });
  if (!has("claimed") && !truncated) timeline.unshift(fromRecord("claimed", record.createdAt, null));
  if (record.phase.name === "complete" && !has("completed")) {
    timeline.push(
      fromRecord("completed", record.updatedAt, `${record.phase.finishedBy} ${record.phase.response.status}`),
    );
  }

  const stored = parseFields(row.requestFields);
  const reuses = reuseRows.map((r) => {
    const sameClient = r.apiClientId === record.apiClientId;
    const attempted = sameClient ? parseFields(r.attemptedFields) : null;
    return {
      id: String(r.id),
      at: r.createdAt,
      // Another client's attempt: who, and nothing of what it sent.
      otherClient: other(r.apiClientId),
      diff: sameClient && stored && attempted ? diffFields(stored, attempted) : null,
    };
  });

  return {
    request: {
      ...summary!,
      requestHash: record.requestHash,
      fields: stored,
      responseBody: record.phase.name === "complete" ? record.phase.response.body : null,
      lastAttemptAt: record.lastAttemptAt,
      charge: row.charge && {
        id: row.charge.id,
        amountCents: row.charge.amountCents,
        currency: row.charge.currency,
        status: row.charge.status,
        failureCode: row.charge.failureCode,
        customerId: row.charge.customerId,
        gatewayChargeId: row.charge.gatewayChargeId,
        createdAt: row.charge.createdAt,
      },
      refund: row.refund && {
        id: row.refund.id,
        chargeId: row.refund.chargeId,
        amountCents: row.refund.amountCents,
        currency: row.refund.currency,
        reason: row.refund.reason,
        gatewayRefundId: row.refund.gatewayRefundId,
        createdAt: row.refund.createdAt,
      },
    },
    timeline,
    timelineTruncated: truncated,
    /** The ledger's open findings about this request or its charge: the page warns of them. */
    openMismatches,
    counts,
    reuses,
    reapAfterMs: env.REAP_AFTER_MS,
  };
}
