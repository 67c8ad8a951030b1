import { env } from "~/env";
import type { IdempotentRequest } from "~/generated/prisma/client";
import { recordChargeAndComplete } from "~/server/charges/recordCharge";
import { db, pipelinedTransaction } from "~/server/db";
import { isLockConflictError, retryOnLockConflict } from "~/server/dbConflicts";
import { deriveGatewayKey, gateway } from "~/server/gateway";
import { errorBody } from "~/server/http/apiError";
import { completeRequest } from "~/server/idempotency/store";

export type ReapResult = { reaped: number; reconciled: number; skipped: number };

/**
 * Finishes in_progress records that nobody is working on any more (the process
 * crashed, or a released claim was never retried). Before giving up on one it
 * asks the gateway under the derived key: if the money moved, the local charge
 * is written and the record completes with the real 201.
 *
 * Safe with several instances: a record is leased with a conditional UPDATE
 * first, and only the instance whose UPDATE matched goes on with it.
 */
export async function reapAbandoned({
  olderThanMs = env.REAP_AFTER_MS,
  batchSize = 100,
}: { olderThanMs?: number; batchSize?: number } = {}): Promise<ReapResult> {
  const result: ReapResult = { reaped: 0, reconciled: 0, skipped: 0 };
  const now = new Date();
  const cutoff = new Date(now.getTime() - olderThanMs);
  const candidates = await db.idempotentRequest.findMany({
    where: { state: "in_progress", updatedAt: { lt: cutoff } },
    orderBy: { updatedAt: "asc" },
    take: batchSize,
  });

  for (const candidate of candidates) {
    if (!(await lease(candidate.id, cutoff, now))) continue; // another instance, or a retry, got there first
    try {
      const outcome = await finishAbandoned(candidate);
      result[outcome] += 1;
    } catch (error) {
      // Gateway unreachable, say: the lease expires and the next sweep tries again.
      console.error(`sweep: could not finish request ${candidate.id}:`, (error as Error).message);
      result.skipped += 1;
    }
  }
  return result;
}

/** Takes a stale record for this sweeper; false when someone else holds or finished it. */
async function lease(id: bigint, cutoff: Date, now: Date): Promise<boolean> {
  try {
    const updated = await db.$executeRaw`
      UPDATE idempotent_requests SET locked_at = ${now}, updated_at = ${now}
      WHERE id = ${id} AND state = 'in_progress' AND updated_at < ${cutoff}`;
    return updated === 1;
  } catch (error) {
    // A lock conflict here means another sweeper is leasing the same record.
    if (isLockConflictError(error)) return false;
    throw error;
  }
}

async function finishAbandoned(request: IdempotentRequest): Promise<"reaped" | "reconciled"> {
  const gatewayKey = deriveGatewayKey(request);
  const metadata = { requestId: String(request.id), apiClientId: String(request.apiClientId), idempotencyKey: request.idempotencyKey };
  const lookup = await gateway.findCharge({ idempotencyKey: gatewayKey, metadata, lastAttemptAt: request.updatedAt });
  if (lookup.kind === "unproven") throw new Error(`gateway cannot tell yet: ${lookup.reason}`);
  if (lookup.kind === "charged") {
    await recordChargeAndComplete(request, lookup.charge, gatewayKey, "reconciled");
    return "reconciled";
  }
  const abandoned = {
    status: 500,
    body: errorBody("request_abandoned", "The request was interrupted before it reached the payment gateway; no charge was made."),
  };
  await retryOnLockConflict(() => pipelinedTransaction([completeRequest(request.id, abandoned, "abandoned")], () => true));
  return "reaped";
}
