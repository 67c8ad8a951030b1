import type { Refund } from "~/generated/prisma/client";
import { recordAudit } from "~/server/audit/audit";
import { db, isDuplicateKeyError } from "~/server/db";
import type { ListedGatewayRefund } from "~/server/gateway";
import { NO_REQUEST } from "~/server/http/requestInfo";
import type { IdempotencyRecord } from "~/server/idempotency";
import { correctWriteOffStatement } from "~/server/idempotency/maintenance";
import { log } from "~/server/observability/log";
import { newRefundId } from "~/server/refunds/refundWork";
import { responseForRefund, serializeRefund } from "~/server/refunds/responses";
import { writeEventInPrisma } from "~/server/events/write";

/**
 * A gateway refund made for an operation the app answered "no refund was made" (written off; the request reached
 * the gateway later than STRIPE_SEARCH_CONSISTENCY_MS allowed for, and Stripe has no deadline to refuse it by). A
 * refund cannot be taken back, so it is recorded as the refund of that operation it is: gateway and app refunds
 * stay 1:1 and the charge's refunded amount adds up, and the operation's stored answer becomes that refund, so
 * that no replay goes on saying "no refund was made" (lifecycle.ts, correct). Only while refunded + held + this
 * amount fits the charge, decided under the charge's row lock: the gateway's own limit makes it fit once the
 * holds in flight end, so until then the next run asks again (null). Audited; the reconciliation also reports it
 * for a person, since the client was told otherwise and may have refunded again.
 */
export async function recordLateRefund(record: IdempotencyRecord, late: ListedGatewayRefund): Promise<Refund | null> {
  let recorded: Refund | null;
  try {
    recorded = await db.$transaction(async (tx) => {
      // The charge the operation named, checked against the one the gateway refunded.
      const [charge] = await tx.$queryRaw<{ id: string; currency: string; reason: string | null }[]>`
        SELECT c.id, c.currency, JSON_VALUE(r.request_fields, '$.reason') AS reason
          FROM idempotent_requests r JOIN charges c ON c.id = JSON_VALUE(r.request_fields, '$.charge')
         WHERE r.id = ${record.id} AND c.api_client_id = ${record.apiClientId}
           AND c.gateway_charge_id = ${late.chargeId}`;
      if (!charge) return null;
      const fits = await tx.$executeRaw`
        UPDATE charges SET amount_refunded_cents = amount_refunded_cents + ${late.amountCents}
         WHERE id = ${charge.id} AND amount_refunded_cents + refund_held_cents + ${late.amountCents} <= amount_cents`;
      if (fits !== 1) return null;
      const refund = await tx.refund.create({
        data: {
          id: newRefundId(),
          chargeId: charge.id,
          apiClientId: record.apiClientId,
          amountCents: late.amountCents,
          currency: charge.currency,
          reason: charge.reason as Refund["reason"],
          gatewayRefundId: late.id,
          gatewayIdempotencyKey: late.idempotencyKey,
          idempotentRequestId: record.id,
          createdAt: late.createdAt,
        },
      });
      const { sql, values } = correctWriteOffStatement(record, responseForRefund(refund));
      if ((await tx.$executeRawUnsafe(sql, ...values)) !== 1) throw new WriteOffMoved();
      await writeEventInPrisma(tx, {
        type: "refund.late_recorded",
        apiClientId: record.apiClientId,
        object: serializeRefund(refund),
        chargeId: charge.id,
        requestId: record.id,
        idempotencyKey: record.idempotencyKey,
      });
      await recordAudit(
        { actor: { type: "system", name: "reconciliation" }, request: NO_REQUEST },
        {
          action: "ledger.late_refund_recorded",
          target: { type: "charge", id: charge.id },
          details: {
            record: String(record.id),
            gateway_refund: late.id,
            refund: refund.id,
            amount_cents: late.amountCents,
          },
        },
        tx,
      );
      return refund;
    });
  } catch (error) {
    if (error instanceof WriteOffMoved) return null; // corrected by another run meanwhile: nothing written here
    // Another run recorded it first: the unique gateway key decided.
    if (!isDuplicateKeyError(error)) throw error;
    return db.refund.findUnique({ where: { gatewayIdempotencyKey: late.idempotencyKey } });
  }
  // Said once committed, as a late charge's heal is.
  if (recorded)
    log.warn({ recordId: String(record.id), gatewayRefund: late.id, refund: recorded.id }, "late refund recorded");
  return recorded;
}

/** The write-off was no longer there to correct: the transaction rolls back. */
class WriteOffMoved extends Error {}
