/**
 * The evidence of possible duplicate pairs, read from their charges' request
 * records in one statement: the classification (evidence.ts) and a copy of the
 * two requests (key, canonical hash, fields without the card token), kept with
 * the pair because the records expire long before an incident is closed.
 */
import { db } from "~/server/db";
import { keyFromBytes } from "~/server/idempotency/reading";
import { parseFields } from "~/server/requests/fieldDiff";
import { classifyPair, type DuplicateEvidence, type RequestEvidence } from "./evidence";

export type RequestSnapshot = RequestEvidence & { requestId: string; fields: Record<string, unknown> | null };

export type PairRequests = { later: RequestSnapshot | null; earlier: RequestSnapshot | null };

type PairRecordIds = { requestId: bigint | null; earlierRequestId: bigint | null; gapMs: number };

/** Reads the records of the pairs' charges (bounded by the pairs given) and classifies each pair. */
export async function pairEvidence(
  pairs: PairRecordIds[],
): Promise<{ evidence: DuplicateEvidence; requests: PairRequests }[]> {
  const ids = [...new Set(pairs.flatMap((p) => [p.requestId, p.earlierRequestId]).filter((id) => id !== null))];
  const records = await requestSnapshots(ids);
  return pairs.map((p) => {
    const later = p.requestId === null ? null : (records.get(String(p.requestId)) ?? null);
    const earlier = p.earlierRequestId === null ? null : (records.get(String(p.earlierRequestId)) ?? null);
    return { evidence: classifyPair(later, earlier, p.gapMs), requests: { later, earlier } };
  });
}

/** The records by id, as snapshots; a pruned record is simply absent. */
export async function requestSnapshots(ids: bigint[]): Promise<Map<string, RequestSnapshot>> {
  if (ids.length === 0) return new Map();
  const rows = await db.idempotentRequest.findMany({
    where: { id: { in: ids } },
    select: { id: true, idempotencyKey: true, requestHash: true, requestFields: true },
  });
  return new Map(
    rows.map((r) => [
      String(r.id),
      {
        requestId: String(r.id),
        idempotencyKey: r.idempotencyKey === null ? null : keyFromBytes(r.idempotencyKey),
        requestHash: r.requestHash,
        fields: parseFields(r.requestFields),
      },
    ]),
  );
}

export function parsePairRequests(text: string | null): PairRequests {
  if (!text) return { later: null, earlier: null };
  try {
    return JSON.parse(text) as PairRequests;
  } catch {
    return { later: null, earlier: null };
  }
}
