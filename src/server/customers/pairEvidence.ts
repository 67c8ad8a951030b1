/**
 * The evidence of possible duplicate pairs, read from their charges' request
 * records and their keys' timelines: the classification (evidence.ts) and a
 * copy of the two requests (key, canonical hash, fields without the card
 * token, when each arrived and was settled, what its attempts were answered),
 * kept with the pair because the records and events expire long before an
 * incident is closed.
 */
import { db } from "~/server/db";
import { keyFromBytes } from "~/server/idempotency/reading";
import { parseFields } from "~/server/requests/fieldDiff";
import { type AttemptAnswer, classifyPair, type DuplicateEvidence, type RequestEvidence } from "./evidence";

export type RequestSnapshot = RequestEvidence & { requestId: string; fields: Record<string, unknown> | null };

export type PairRequests = { later: RequestSnapshot | null; earlier: RequestSnapshot | null };

/** A charge as the evidence needs it: its record (null once pruned), when it was requested and settled. */
export type ChargeTimes = { idempotentRequestId: bigint | null; requestedAt: Date; createdAt: Date };

type PairCharges = { later: ChargeTimes; earlier: ChargeTimes; gapMs: number };

/** Reads the records and timelines of the pairs' charges (bounded by the pairs given) and classifies each pair. */
export async function pairEvidence(
  pairs: PairCharges[],
): Promise<{ evidence: DuplicateEvidence; requests: PairRequests }[]> {
  const snapshotOf = await chargeSnapshots(pairs.flatMap((p) => [p.later, p.earlier]));
  return pairs.map((p) => {
    const later = snapshotOf(p.later);
    const earlier = snapshotOf(p.earlier);
    return { evidence: classifyPair(later, earlier, p.gapMs), requests: { later, earlier } };
  });
}

/** The charges' requests as snapshots; a charge whose record was pruned has none. */
export async function chargeSnapshots(charges: ChargeTimes[]): Promise<(c: ChargeTimes) => RequestSnapshot | null> {
  const records = await requestSnapshots(
    charges.flatMap((c) => (c.idempotentRequestId ? [c.idempotentRequestId] : [])),
  );
  return (c) => {
    const record = c.idempotentRequestId === null ? undefined : records.get(String(c.idempotentRequestId));
    return record ? { ...record, requestedAt: c.requestedAt, settledAt: c.createdAt } : null;
  };
}

/** A request's answers read from its timeline: its first attempts, oldest first. */
const ANSWERS_PER_REQUEST = 10;

/** The records by id, as snapshots with their attempts' answers; a pruned record is simply absent. */
export async function requestSnapshots(ids: bigint[]): Promise<Map<string, RequestSnapshot>> {
  if (ids.length === 0) return new Map();
  const rows = await db.idempotentRequest.findMany({
    where: { id: { in: [...new Set(ids)] } },
    select: { id: true, idempotencyKey: true, route: true, requestHash: true, requestFields: true, createdAt: true },
  });
  const answers = await answersOf(rows);
  return new Map(
    rows.map((r) => [
      String(r.id),
      {
        requestId: String(r.id),
        idempotencyKey: r.idempotencyKey === null ? null : keyFromBytes(r.idempotencyKey),
        requestHash: r.requestHash,
        fields: parseFields(r.requestFields),
        answers: answers.get(String(r.id)) ?? null,
      },
    ]),
  );
}

/** How far an instance's clock may be behind the record's (the timeline's own allowance, events.ts). */
const CLOCK_SKEW_MS = 5_000;

/**
 * The `answered` events of each record, one indexed probe each: a keyless request's by its record, a keyed
 * operation's by its key and route since it was claimed (a replay is answered without naming the record).
 */
async function answersOf(
  records: { id: bigint; idempotencyKey: Uint8Array | null; route: string; createdAt: Date }[],
): Promise<Map<string, AttemptAnswer[]>> {
  if (records.length === 0) return new Map();
  const keyless = `(SELECT ? AS recordId, created_at AS at, status, latency_ms AS latencyMs, client_gone AS clientGone
                      FROM idempotency_events FORCE INDEX (idempotency_events_request_idx)
                     WHERE request_id = ? AND kind = 'answered' ORDER BY created_at LIMIT ${ANSWERS_PER_REQUEST})`;
  const keyed = `(SELECT ? AS recordId, created_at AS at, status, latency_ms AS latencyMs, client_gone AS clientGone
                    FROM idempotency_events FORCE INDEX (idempotency_events_key_idx)
                   WHERE idempotency_key = ? AND route = ? AND created_at >= ? AND kind = 'answered'
                   ORDER BY created_at LIMIT ${ANSWERS_PER_REQUEST})`;
  type Row = { recordId: string; at: Date; status: number | null; latencyMs: number | null; clientGone: number | null };
  const rows = await db.$queryRawUnsafe<Row[]>(
    records.map((r) => (r.idempotencyKey === null ? keyless : keyed)).join(" UNION ALL "),
    ...records.flatMap((r): unknown[] =>
      r.idempotencyKey === null
        ? [String(r.id), r.id]
        : [String(r.id), Buffer.from(r.idempotencyKey), r.route, new Date(r.createdAt.getTime() - CLOCK_SKEW_MS)],
    ),
  );
  const byRecord = new Map<string, AttemptAnswer[]>();
  for (const row of rows) {
    if (row.status === null) continue;
    const answer = { at: row.at, status: row.status, latencyMs: row.latencyMs, clientGone: Boolean(row.clientGone) };
    byRecord.set(String(row.recordId), [...(byRecord.get(String(row.recordId)) ?? []), answer]);
  }
  for (const list of byRecord.values()) list.sort((a, b) => new Date(a.at).getTime() - new Date(b.at).getTime());
  return byRecord;
}

export function parsePairRequests(text: string | null): PairRequests {
  if (!text) return { later: null, earlier: null };
  try {
    return JSON.parse(text) as PairRequests;
  } catch {
    return { later: null, earlier: null };
  }
}
