/**
 * After a fault run: an operation whose stored answer says no money moved (an error answer is stored only when it
 * is final: written off as `request_abandoned`, or declined by the gateway) has nothing at the gateway that says
 * otherwise: no succeeded gateway charge (even one the ledger gave back in full: the answer was untrue when it
 * was given), no gateway refund. "Nothing was made" only when nothing can still be made (operations/finality.ts).
 * Pure: it judges what was read from both sides.
 */
import type { ListedGatewayCharge, ListedGatewayRefund } from "~/server/gateway";

/** A complete record whose stored answer is an error, with the gateway key its money would have moved under. */
export type NoMoneyAnswer = {
  recordId: bigint;
  kind: "charge" | "refund";
  /** The client's key, null for a keyless request (for the message). */
  key: string | null;
  gatewayKey: string;
  status: number;
  code: string | null;
};

type Charge = Pick<ListedGatewayCharge, "id" | "status" | "amountCents" | "idempotencyKey" | "metadata">;
type Refund = Pick<ListedGatewayRefund, "id" | "chargeId" | "amountCents" | "idempotencyKey" | "metadata">;

/** The succeeded charges among `charges` that their gateway refunds do not cover in full, with what they cover. */
export function unrefunded(charges: Charge[], refunds: Refund[]): { charge: Charge; refundedCents: number }[] {
  const refunded = new Map<string, number>();
  for (const r of refunds) refunded.set(r.chargeId, (refunded.get(r.chargeId) ?? 0) + r.amountCents);
  return charges
    .filter((c) => c.status === "succeeded")
    .map((charge) => ({ charge, refundedCents: refunded.get(charge.id) ?? 0 }))
    .filter(({ charge, refundedCents }) => refundedCents < charge.amountCents);
}

/** Money under an operation: moved under its gateway key, or naming its record in the metadata sent with it. */
const under = (a: NoMoneyAnswer) => (m: { idempotencyKey: string; metadata: { requestId: string } | null }) =>
  m.idempotencyKey === a.gatewayKey || m.metadata?.requestId === String(a.recordId);

/** One line per operation whose stored "no money moved" the gateway contradicts. */
export function contradictedAnswers(answers: NoMoneyAnswer[], charges: Charge[], refunds: Refund[]): string[] {
  const violations: string[] = [];
  for (const a of answers) {
    const what = `${a.kind} record ${a.recordId} (${a.key ?? "keyless"}) answered ${a.status} ${a.code ?? "?"}`;
    if (a.kind === "charge") {
      for (const charge of charges.filter(under(a)).filter((c) => c.status === "succeeded")) {
        const given = unrefunded([charge], refunds).length === 0 ? " (given back in full since)" : "";
        violations.push(`${what}, but the gateway charged ${charge.amountCents} (${charge.id})${given}`);
      }
    } else {
      for (const r of refunds.filter(under(a)))
        violations.push(`${what}, but the gateway refunded ${r.amountCents} of ${r.chargeId} (${r.id})`);
    }
  }
  return violations;
}
