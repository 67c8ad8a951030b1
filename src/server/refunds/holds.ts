import type { RefundReason } from "~/generated/prisma/client";
import { inTransaction, queryRows, retryOnLockConflict, type Statement } from "~/server/db";
import type { IdempotencyRecord } from "~/server/idempotency";

/** What a refund operation holds on its charge, from before its gateway call until its answer is stored. */
export type Hold = {
  recordId: bigint;
  chargeId: string;
  gatewayChargeId: string;
  amountCents: number;
  currency: string;
  reason: RefundReason | null;
};

type ChargeRow = {
  amount_cents: number;
  amount_refunded_cents: number;
  refund_held_cents: number;
  currency: string;
  gateway_charge_id: string;
};
type HoldRow = { amount_cents: number; reason: RefundReason | null };

/**
 * Holds the refund's amount on its charge before the gateway is called: under the charge's row lock, the
 * database decides whether refunded + held + this amount stays within the charge, so that refunds racing with
 * different keys can never both pass the limit. A retry of the same operation finds its own hold. Without an
 * amount, the hold is what is left then. `left` is what was left when the charge could not take this refund.
 */
export async function holdAmount(
  record: IdempotencyRecord,
  request: { charge: string; amount_cents?: number; reason?: RefundReason },
): Promise<{ kind: "held"; hold: Hold } | { kind: "nothing_left"; left: number }> {
  return retryOnLockConflict(() =>
    inTransaction("READ COMMITTED", async (tx) => {
      const [charge] = await tx.rows<ChargeRow>({
        sql: `SELECT amount_cents, amount_refunded_cents, refund_held_cents, currency, gateway_charge_id
                FROM charges WHERE id = ? AND api_client_id = ? AND status = 'succeeded' FOR UPDATE`,
        values: [request.charge, record.apiClientId],
      });
      if (!charge) throw new Error(`refund operation ${record.id}: charge ${request.charge} is not refundable`);
      const hold = (amountCents: number, reason: RefundReason | null): Hold => ({
        recordId: record.id,
        chargeId: request.charge,
        gatewayChargeId: charge.gateway_charge_id,
        amountCents,
        currency: charge.currency,
        reason,
      });
      const [own] = await tx.rows<HoldRow>({
        sql: "SELECT amount_cents, reason FROM refund_holds WHERE idempotent_request_id = ?",
        values: [record.id],
      });
      if (own) return { kind: "held", hold: hold(own.amount_cents, own.reason) } as const;
      const left = charge.amount_cents - charge.amount_refunded_cents - charge.refund_held_cents;
      const amount = request.amount_cents ?? left;
      if (amount <= 0 || amount > left) return { kind: "nothing_left", left } as const;
      await tx.execute({
        sql: "INSERT INTO refund_holds (idempotent_request_id, charge_id, amount_cents, reason) VALUES (?, ?, ?, ?)",
        values: [record.id, request.charge, amount, request.reason ?? null],
      });
      await tx.execute({
        sql: "UPDATE charges SET refund_held_cents = refund_held_cents + ? WHERE id = ?",
        values: [amount, request.charge],
      });
      return { kind: "held", hold: hold(amount, request.reason ?? null) } as const;
    }),
  );
}

/** The hold of a refund operation, if it got as far as holding (a sweeper's question: no hold, no gateway call). */
export async function findHold(record: IdempotencyRecord): Promise<Hold | null> {
  const [row] = await queryRows<HoldRow & { charge_id: string; currency: string; gateway_charge_id: string }>({
    sql: `SELECT h.amount_cents, h.reason, h.charge_id, c.currency, c.gateway_charge_id
            FROM refund_holds h JOIN charges c ON c.id = h.charge_id WHERE h.idempotent_request_id = ?`,
    values: [record.id],
  });
  if (!row) return null;
  return {
    recordId: record.id,
    chargeId: row.charge_id,
    gatewayChargeId: row.gateway_charge_id,
    amountCents: row.amount_cents,
    currency: row.currency,
    reason: row.reason,
  };
}

/**
 * The hold ends with the operation's answer, in its transaction: refunded (the amount moves from held to
 * refunded) or proven not made (given back). Each statement touches one row, as `atomically` requires.
 */
export function endHold(hold: Hold, refunded: boolean): Statement[] {
  const refundedCents = refunded ? "c.amount_refunded_cents + h.amount_cents" : "c.amount_refunded_cents";
  return [
    {
      sql: `UPDATE charges c JOIN refund_holds h ON h.charge_id = c.id
               SET c.amount_refunded_cents = ${refundedCents},
                   c.refund_held_cents = c.refund_held_cents - h.amount_cents
             WHERE h.idempotent_request_id = ?`,
      values: [hold.recordId],
    },
    { sql: "DELETE FROM refund_holds WHERE idempotent_request_id = ?", values: [hold.recordId] },
  ];
}
