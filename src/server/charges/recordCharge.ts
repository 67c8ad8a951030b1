import { randomBytes } from "node:crypto";
import pLimit from "p-limit";
import { env } from "~/env";
import type { Charge, IdempotentRequest, ReapOutcome } from "~/generated/prisma/client";
import { db, pipelinedTransaction, type Statement } from "~/server/db";
import { retryOnLockConflict } from "~/server/dbConflicts";
import type { GatewayCharge } from "~/server/gateway";
import { isDuplicateKeyError } from "~/server/idempotency/isDuplicateKeyError";
import { completeRequest, findRequest, type StoredResponse } from "~/server/idempotency/store";
import { responseForCharge } from "./responses";

export function newChargeId(): string {
  return `ch_${randomBytes(12).toString("hex")}`;
}

function chargeFromGateway(apiClientId: number, gatewayCharge: GatewayCharge, gatewayKey: string, requestId: bigint | null): Charge {
  return {
    id: newChargeId(),
    apiClientId,
    customerId: gatewayCharge.customerId,
    amountCents: gatewayCharge.amountCents,
    currency: gatewayCharge.currency,
    status: gatewayCharge.status === "succeeded" ? "succeeded" : "failed",
    failureCode: gatewayCharge.declineCode,
    gatewayChargeId: gatewayCharge.id,
    gatewayIdempotencyKey: gatewayKey,
    idempotentRequestId: requestId,
    createdAt: new Date(),
  };
}

/**
 * The charge row, inserted only while its request record is still in_progress.
 * The SELECT ... FOR UPDATE takes the record's X lock first, before the
 * charge's foreign-key check would take an S lock on it (an S-to-X upgrade is a
 * classic InnoDB deadlock under concurrency).
 */
function insertChargeIfInProgress(c: Charge, requestId: bigint): Statement {
  return {
    sql: `INSERT INTO charges (id, api_client_id, customer_id, amount_cents, currency, status, failure_code,
                               gateway_charge_id, gateway_idempotency_key, idempotent_request_id, created_at)
          SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM idempotent_requests WHERE id = ? AND state = 'in_progress' FOR UPDATE`,
    values: [c.id, c.apiClientId, c.customerId, c.amountCents, c.currency, c.status, c.failureCode,
             c.gatewayChargeId, c.gatewayIdempotencyKey, requestId, c.createdAt, requestId],
  };
}

/**
 * At most half the pool records charges at once. Completions arrive in bursts
 * (gateway answers come back together), and a burst that took every connection
 * would make the claims and replays behind it wait, which are what retrying
 * clients wait for. The rest of a burst waits here, in memory, not in the pool.
 */
const completionSlots = pLimit(Math.max(1, Math.floor(env.DATABASE_POOL_SIZE / 2)));

/**
 * Writes the local charge and completes its request record in ONE transaction,
 * so there is never a charge without a stored response or the reverse: it
 * commits only if both statements matched the record (still in_progress; the
 * first locks it). If the record was finished meanwhile (the sweeper
 * reconciled it, or it was reaped), nothing is written and the stored
 * response is returned instead.
 */
export async function recordChargeAndComplete(
  request: IdempotentRequest,
  gatewayCharge: GatewayCharge,
  gatewayKey: string,
  reapedAs: ReapOutcome | null = null,
): Promise<StoredResponse | null> {
  const charge = chargeFromGateway(request.apiClientId, gatewayCharge, gatewayKey, request.id);
  const response = responseForCharge(charge);
  try {
    const statements = [insertChargeIfInProgress(charge, request.id), completeRequest(request.id, response, reapedAs)];
    const committed = await completionSlots(() =>
      retryOnLockConflict(() => pipelinedTransaction(statements, ([charged, completed]) => charged === 1 && completed === 1)),
    );
    if (committed) return response;
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
  }
  const current = await findRequest(request.id);
  if (current?.state !== "complete") return null;
  console.warn(`request ${request.id} was finished by another process; answering its stored response`);
  return { status: current.responseStatus ?? 500, body: current.responseBody ?? "" };
}

/** A keyless charge: nothing to complete, and nothing protects a retry of it. */
export async function recordKeylessCharge(apiClientId: number, gatewayCharge: GatewayCharge, gatewayKey: string) {
  const charge = chargeFromGateway(apiClientId, gatewayCharge, gatewayKey, null);
  await db.charge.createMany({ data: charge }); // one INSERT: the row is built here, no read-back
  return responseForCharge(charge);
}
