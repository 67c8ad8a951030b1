import { randomBytes } from "node:crypto";
import type { Refund } from "~/generated/prisma/client";
import { env } from "~/env";
import type { Statement } from "~/server/db";
import { deriveGatewayKey, gateway, GatewayRefusedError, metadataFor, type GatewayRefund } from "~/server/gateway";
import type { FinishedBy, HeldClaim, IdempotencyRecord, WorkResult } from "~/server/idempotency";
import { log } from "~/server/observability/log";
import { endHold, findHold, holdAmount, type Hold } from "./holds";
import {
  abandonedRefundResponse,
  declinedRefundResponse,
  failedRefundObject,
  responseForRefund,
  serializeRefund,
} from "./responses";
import type { CreateRefundInput } from "./schema";

export const newRefundId = () => `re_${randomBytes(12).toString("hex")}`;

const recordFields = (record: IdempotencyRecord) => ({
  recordId: String(record.id),
  apiClientId: record.apiClientId,
  idempotencyKey: record.idempotencyKey,
});

/** The refund row. Its unique gateway key is the last line of defence: one local refund per gateway refund. */
export function insertRefund(r: Refund): Statement {
  return {
    sql: `INSERT INTO refunds (id, charge_id, api_client_id, amount_cents, currency, reason, gateway_refund_id,
                               gateway_idempotency_key, idempotent_request_id, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    values: [
      r.id,
      r.chargeId,
      r.apiClientId,
      r.amountCents,
      r.currency,
      r.reason,
      r.gatewayRefundId,
      r.gatewayIdempotencyKey,
      r.idempotentRequestId,
      r.createdAt,
    ],
  };
}

/** A refund the gateway made, stored with its answer (201) and the end of its hold, in one transaction. */
function refundCompletion(
  record: IdempotencyRecord,
  hold: Hold,
  made: GatewayRefund,
  gatewayKey: string,
  finishedBy?: Exclude<FinishedBy, "request">,
): WorkResult {
  const refund: Refund = {
    id: newRefundId(),
    chargeId: hold.chargeId,
    apiClientId: record.apiClientId,
    amountCents: hold.amountCents,
    currency: hold.currency,
    reason: hold.reason,
    gatewayRefundId: made.id,
    gatewayIdempotencyKey: gatewayKey,
    idempotentRequestId: record.id,
    createdAt: new Date(),
  };
  if (made.amountCents !== hold.amountCents) {
    log.error({ ...recordFields(record), held: hold.amountCents, refunded: made.amountCents }, "refund amount differs");
  }
  return {
    kind: "complete",
    response: responseForRefund(refund),
    writes: [insertRefund(refund), ...endHold(hold, true)],
    finishedBy,
    event: { type: "refund.succeeded", object: serializeRefund(refund), chargeId: refund.chargeId },
  };
}

/**
 * The work of POST /api/refunds under a held claim: hold the amount on the charge (the database decides the
 * limit), then one gateway call under the derived key, bounded by the claim's deadline. An unknown outcome keeps
 * the hold: the next attempt, or the sweeper, asks the gateway again under the same key.
 */
export async function refundOnGateway(held: HeldClaim, input: CreateRefundInput): Promise<WorkResult> {
  const holding = await holdAmount(held.record, input, held.atClaim);
  // Where the hold was not made with the claim (a keyless refund, a claim that met its charge locked, a
  // take-over): no attempt held, so none called the gateway, and the refusal stores nothing (refundOperation).
  if (holding.kind === "refused") return { kind: "declined", rows: holding.decision ? [holding.decision] : [] };
  // Taken over, written off or withdrawn while this attempt waited for the charge: it holds and calls nothing, and
  // its release matches nothing; the client's retry reads what the record came to.
  if (holding.kind === "lost") return { kind: "unknown" };
  const { hold } = holding;
  const gatewayKey = deriveGatewayKey(held.record);
  // A take-over (an earlier attempt's outcome is unknown) asks first: Stripe replays a stored 500 to every retry
  // under the key, but its refund list is strongly consistent.
  if (held.record.attempt > 1) {
    const lookup = await gateway.findRefund({ idempotencyKey: gatewayKey, chargeId: hold.gatewayChargeId });
    if (lookup.kind === "refunded") return refundCompletion(held.record, hold, lookup.refund, gatewayKey);
  }
  const timeoutMs = Math.min(env.GATEWAY_TIMEOUT_MS, held.deadline.getTime() - Date.now());
  try {
    const made = await gateway.refund(
      { chargeId: hold.gatewayChargeId, amountCents: hold.amountCents, metadata: metadataFor(held.record) },
      { idempotencyKey: gatewayKey, timeoutMs, notAfter: held.deadline },
    );
    return refundCompletion(held.record, hold, made, gatewayKey);
  } catch (error) {
    if (error instanceof GatewayRefusedError) {
      return {
        kind: "complete",
        response: declinedRefundResponse(error.code),
        writes: endHold(hold, false),
        event: { type: "refund.failed", object: failedRefundObject(hold, error.code), chargeId: hold.chargeId },
      };
    }
    log.warn({ ...recordFields(held.record), err: error }, "gateway refund outcome unknown; the claim is released");
    return { kind: "unknown" };
  }
}

/**
 * What happened to a refund operation nobody finished, asked of the gateway without creating anything. No hold:
 * it never got to the gateway (the hold comes first), so nothing was refunded.
 */
export async function settleRefund(held: HeldClaim): Promise<WorkResult> {
  const hold = await findHold(held.record);
  if (!hold) return { kind: "complete", response: abandonedRefundResponse, writes: [], finishedBy: "abandoned" };
  const gatewayKey = deriveGatewayKey(held.record);
  const lookup = await gateway.findRefund({ idempotencyKey: gatewayKey, chargeId: hold.gatewayChargeId });
  switch (lookup.kind) {
    case "refunded":
      return refundCompletion(held.record, hold, lookup.refund, gatewayKey, "reconciled");
    case "not_refunded":
      return {
        kind: "complete",
        response: abandonedRefundResponse,
        writes: endHold(hold, false),
        finishedBy: "abandoned",
      };
    case "unproven":
      log.warn({ ...recordFields(held.record), reason: lookup.reason }, "the gateway cannot tell yet; ask again later");
      return { kind: "unknown" };
  }
}
