/**
 * A double charge is one case with two charges, and one refund gives the customer back what they paid twice. A
 * dashboard refund of a half whose other half was refunded (or is being refunded: a hold) needs the explicit
 * override. The first refund of a case claims it (double_charge_claims, insert first) before its operation is
 * submitted, so that two people refunding the two halves at the same moment cannot both go ahead: the second
 * finds the claim and is asked for the override. A claim whose refund was refused is let go; one that moved no
 * money within CLAIM_STALE_MS (the process died between the claim and the refund) is taken over.
 */
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { casesOfCharge, type ChargeCase } from "./cases";

const CLAIM_STALE_MS = 60_000;

export type PairGuard = {
  /** The cases this refund resolves, and whose claims it made (let go if the refund is refused). */
  claimed: string[];
  /** The cases whose other half was refunded already: this refund is the override. */
  overridden: ChargeCase[];
};

/** Checks and claims the cases of a charge about to be refunded; throws when the override is needed and absent. */
export async function guardPairRefund(chargeId: string, override: boolean): Promise<PairGuard> {
  const cases = await casesOfCharge(chargeId);
  const resolvedByOther = cases.filter((c) => c.other && c.other.refundedCents + c.other.heldCents > 0);
  const open = cases.filter((c) => !resolvedByOther.includes(c));
  const claimed: string[] = [];
  for (const c of open) {
    if (await claim(c.key, chargeId)) claimed.push(c.key);
    else resolvedByOther.push(c);
  }
  if (resolvedByOther.length > 0 && !override) {
    await release(chargeId, claimed);
    throw new DomainError("conflict", overrideNeeded(resolvedByOther));
  }
  return { claimed, overridden: resolvedByOther };
}

/** Lets go of the claims of a refund that was refused: the case is open again. */
export async function release(chargeId: string, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await db.doubleChargeClaim.deleteMany({ where: { caseKey: { in: keys }, chargeId } });
}

/** Claims a case for this half: true if it is ours (new, ours already, or taken over from a stale claim). */
async function claim(key: string, chargeId: string): Promise<boolean> {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`INSERT IGNORE INTO double_charge_claims (case_key, charge_id, created_at)
                           VALUES (${key}, ${chargeId}, NOW(6))`;
    const [held] = await tx.$queryRaw<{ chargeId: string; stale: number | bigint }[]>`
      SELECT k.charge_id AS chargeId,
             k.created_at < NOW(6) - INTERVAL ${CLAIM_STALE_MS * 1000} MICROSECOND
               AND c.amount_refunded_cents + c.refund_held_cents = 0 AS stale
        FROM double_charge_claims k JOIN charges c ON c.id = k.charge_id
       WHERE k.case_key = ${key} FOR UPDATE`;
    if (!held || held.chargeId === chargeId) return true;
    if (!Number(held.stale)) return false;
    await tx.$executeRaw`UPDATE double_charge_claims SET charge_id = ${chargeId}, created_at = NOW(6)
                          WHERE case_key = ${key}`;
    return true;
  });
}

function overrideNeeded(cases: ChargeCase[]): string {
  const said = cases.map((c) => {
    const refund = c.other?.refunds[0];
    const who = refund ? ` by ${refund.by}` : " (a refund is being made)";
    const note = refund?.notes[0] ? `: “${refund.notes[0].note}”` : "";
    return `${c.other?.id} was refunded${who}${note}`;
  });
  return (
    `This charge and the other charge of its double charge were paid for once: ${said.join("; ")}. ` +
    "Refunding this one too needs the override, with a reason."
  );
}
