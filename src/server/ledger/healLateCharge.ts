import type { Charge, Refund } from "~/generated/prisma/client";
import { env } from "~/env";
import { recordAudit } from "~/server/audit/audit";
import { chargeFromGateway } from "~/server/charges/chargeRows";
import { db } from "~/server/db";
import { deriveGatewayKey, gateway, metadataFor, type ListedGatewayCharge } from "~/server/gateway";
import { NO_REQUEST } from "~/server/http/requestInfo";
import type { IdempotencyRecord } from "~/server/idempotency";
import { log } from "~/server/observability/log";
import { newRefundId } from "~/server/refunds/refundWork";

/**
 * The healing refund's gateway key: derived from the operation, as its charge's key is, on a route of its own,
 * so every attempt at healing one operation reaches the gateway under one key and refunds it once.
 */
export const healingKey = (record: IdempotencyRecord) => deriveGatewayKey({ ...record, route: `${record.route}#heal` });

/**
 * A gateway charge made for an operation the app answered "no charge was made" (written off by the sweeper; it
 * arrived late): refunded in full at the gateway, then recorded as what it now is, a charge of that operation
 * given back whole, so the stored answer is true again without a person. Only a charge tied to the operation by
 * its derived key gets here (reconcile.ts, ownerOf); anything else stays a mismatch for a person. Safe to run
 * again after a crash: the refund's key makes the gateway answer the same refund, and rows already written stay.
 */
export async function healLateCharge(record: IdempotencyRecord, late: ListedGatewayCharge): Promise<Refund> {
  const key = healingKey(record);
  const made = await gateway.refund(
    { chargeId: late.id, amountCents: late.amountCents, metadata: metadataFor(record) },
    { idempotencyKey: key, timeoutMs: env.GATEWAY_TIMEOUT_MS },
  );
  const charge: Charge = {
    ...chargeFromGateway(record, late, late.idempotencyKey),
    amountRefundedCents: late.amountCents,
  };
  const refund: Refund = {
    id: newRefundId(),
    chargeId: charge.id,
    apiClientId: record.apiClientId,
    amountCents: made.amountCents,
    currency: late.currency.toLowerCase(),
    reason: "duplicate",
    gatewayRefundId: made.id,
    gatewayIdempotencyKey: key,
    idempotentRequestId: null,
    createdAt: new Date(),
  };
  const healed = await db.$transaction(async (tx) => {
    const known = await tx.refund.findUnique({ where: { gatewayIdempotencyKey: key } });
    if (known) return known;
    const existing = await tx.charge.findUnique({ where: { gatewayIdempotencyKey: late.idempotencyKey } });
    const chargeId = existing?.id ?? (await tx.charge.create({ data: charge })).id;
    if (existing) {
      await tx.charge.update({
        where: { id: existing.id },
        data: { amountRefundedCents: { increment: made.amountCents } },
      });
    }
    const row = await tx.refund.create({ data: { ...refund, chargeId } });
    await recordAudit(
      { actor: { type: "system", name: "reconciliation" }, request: NO_REQUEST },
      {
        action: "ledger.late_charge_healed",
        target: { type: "charge", id: chargeId },
        details: { record: String(record.id), gateway_charge: late.id, refund: row.id, amount_cents: made.amountCents },
      },
      tx,
    );
    return row;
  });
  log.warn({ recordId: String(record.id), gatewayCharge: late.id, refund: healed.id }, "late charge healed: refunded");
  return healed;
}
