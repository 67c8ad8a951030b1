import type { Charge, Refund } from "~/generated/prisma/client";
import { env } from "~/env";
import { recordAudit } from "~/server/audit/audit";
import { chargeFromGateway } from "~/server/charges/chargeRows";
import { serializeCharge } from "~/server/charges/responses";
import { writeEventInPrisma } from "~/server/events/write";
import { db } from "~/server/db";
import { deriveGatewayKey, gateway, metadataFor, type ListedGatewayCharge } from "~/server/gateway";
import { NO_REQUEST } from "~/server/http/requestInfo";
import type { IdempotencyRecord } from "~/server/idempotency";
import { log } from "~/server/observability/log";
import { newRefundId } from "~/server/refunds/refundWork";
import { serializeRefund } from "~/server/refunds/responses";

/**
 * How many gateway keys a heal may use. Stripe answers every later request under a key with the 500 it once
 * answered (for 24 h), so a key whose refund failed cannot heal; the next one can. A second full refund of one
 * charge is refused by the gateway, so a later key never refunds what an earlier one did.
 */
const HEALING_KEYS = 3;

/** The routes the healing keys are derived on: the operation's own, marked, and numbered after the first. */
export const healingRoutes = (route: string) =>
  Array.from({ length: HEALING_KEYS }, (_, i) => `${route}#heal${i === 0 ? "" : i + 1}`);

/**
 * The healing refund's gateway keys, in the order they are tried: derived from the operation, as its charge's key
 * is, on routes of their own, so every attempt at healing one operation reaches the gateway under the same keys.
 */
export const healingKeys = (record: IdempotencyRecord) =>
  healingRoutes(record.route).map((route) => deriveGatewayKey({ ...record, route }));

/**
 * The late charge's full refund: one an earlier attempt made (asked under each key first: its answer may have
 * been lost), else made under the first key that gets one. Throws the last failure when none does; the next
 * reconciliation tries again.
 */
async function healingRefund(record: IdempotencyRecord, late: ListedGatewayCharge) {
  const keys = healingKeys(record);
  for (const key of keys) {
    const lookup = await gateway.findRefund({ idempotencyKey: key, chargeId: late.id });
    if (lookup.kind === "refunded") return { made: lookup.refund, key };
  }
  let failure: unknown;
  for (const key of keys) {
    try {
      const made = await gateway.refund(
        { chargeId: late.id, amountCents: late.amountCents, metadata: metadataFor(record) },
        { idempotencyKey: key, timeoutMs: env.GATEWAY_TIMEOUT_MS },
      );
      return { made, key };
    } catch (error) {
      log.warn({ recordId: String(record.id), gatewayCharge: late.id, err: error }, "healing refund failed");
      failure = error;
    }
  }
  throw failure;
}

/**
 * A gateway charge made for an operation the app answered "no charge was made" (written off by the sweeper; it
 * arrived late): refunded in full at the gateway, then recorded as what it now is, a charge of that operation
 * given back whole, so the stored answer is true again without a person. Only a charge tied to the operation by
 * its derived key gets here (reconcile.ts, ownerOf); anything else stays a mismatch for a person. Safe to run
 * again after a crash: the refund made is found under its key, and rows already written stay.
 */
export async function healLateCharge(record: IdempotencyRecord, late: ListedGatewayCharge): Promise<Refund> {
  const { made, key } = await healingRefund(record, late);
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
    // The merchant was told "no charge was made"; it is told what the charge was and that it was given back.
    const healedCharge = await tx.charge.findUniqueOrThrow({ where: { id: chargeId } });
    await writeEventInPrisma(tx, {
      type: "charge.late_healed",
      apiClientId: record.apiClientId,
      object: serializeCharge(healedCharge, [serializeRefund(row)]),
      chargeId,
      requestId: record.id,
      idempotencyKey: record.idempotencyKey,
    });
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
