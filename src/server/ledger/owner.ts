import { deriveGatewayKey } from "~/server/gateway";
import type { IdempotencyRecord } from "~/server/idempotency";
import { findRecord } from "~/server/idempotency/reading";
import { parseRecordId } from "~/lib/recordId";

/**
 * The record that owns a gateway charge or refund: the one its metadata names, and only if the record's derived
 * gateway key is the one the money moved under (metadata alone can be anyone's).
 */
export async function ownerOf(moved: {
  idempotencyKey: string;
  metadata: { requestId: string } | null;
}): Promise<IdempotencyRecord | null> {
  const id = parseRecordId(moved.metadata?.requestId);
  const record = id === null ? null : await findRecord(id);
  return record && deriveGatewayKey(record) === moved.idempotencyKey ? record : null;
}
