import { randomBytes } from "node:crypto";
import type { Charge } from "~/generated/prisma/client";
import type { Statement } from "~/server/db";
import type { GatewayCharge } from "~/server/gateway";
import type { FinishedBy, IdempotencyRecord, WorkResult } from "~/server/idempotency";
import { responseForCharge, serializeCharge } from "./responses";

export function newChargeId(): string {
  return `ch_${randomBytes(12).toString("hex")}`;
}

/**
 * The local charge for a gateway charge, made for a client under a request record (null: none, benchmarks only).
 * It was requested when the record was made: the operation's first attempt (a keyless request's own arrival),
 * however much later it is settled (a retry, the sweeper).
 */
export function chargeFromGateway(
  owner: { apiClientId: number; id: bigint | null; createdAt?: Date },
  gatewayCharge: GatewayCharge,
  gatewayKey: string,
): Charge {
  const settledAt = new Date();
  return {
    id: newChargeId(),
    apiClientId: owner.apiClientId,
    customerId: gatewayCharge.customerId,
    amountCents: gatewayCharge.amountCents,
    currency: gatewayCharge.currency,
    status: gatewayCharge.status === "succeeded" ? "succeeded" : "failed",
    failureCode: gatewayCharge.declineCode,
    gatewayChargeId: gatewayCharge.id,
    gatewayIdempotencyKey: gatewayKey,
    idempotentRequestId: owner.id,
    createdAt: settledAt,
    requestedAt: owner.createdAt && owner.createdAt < settledAt ? owner.createdAt : settledAt,
    amountRefundedCents: 0,
    refundHeldCents: 0,
  };
}

/** The charge row. Its unique gateway key is the last line of defence: one local charge per gateway charge. */
export function insertCharge(c: Charge): Statement {
  return {
    sql: `INSERT INTO charges (id, api_client_id, customer_id, amount_cents, currency, status, failure_code,
                               gateway_charge_id, gateway_idempotency_key, idempotent_request_id, created_at,
                               requested_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    values: [
      c.id,
      c.apiClientId,
      c.customerId,
      c.amountCents,
      c.currency,
      c.status,
      c.failureCode,
      c.gatewayChargeId,
      c.gatewayIdempotencyKey,
      c.idempotentRequestId,
      c.createdAt,
      c.requestedAt,
    ],
  };
}

/**
 * What a definite gateway answer comes to: the charge row and the answer for
 * the client (201, or 402 for a decline), stored together by the idempotency
 * module when it completes the record.
 */
export function chargeCompletion(
  record: IdempotencyRecord,
  gatewayCharge: GatewayCharge,
  gatewayKey: string,
  finishedBy?: Exclude<FinishedBy, "request">,
): WorkResult {
  const charge = chargeFromGateway(record, gatewayCharge, gatewayKey);
  const type = charge.status === "succeeded" ? "charge.succeeded" : "charge.failed";
  return {
    kind: "complete",
    response: responseForCharge(charge),
    writes: [insertCharge(charge)],
    finishedBy,
    event: { type, object: serializeCharge(charge), chargeId: charge.id },
  };
}
