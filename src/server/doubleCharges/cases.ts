/**
 * A likely double charge is one case with two charges (a stored pair the sweeper classified, or, before its scan,
 * the customer page's live pair). Refunding either half resolves it for everyone: this module says, for charges
 * and their cases, what was given back, of which charge, when, by whom and with which note, and how much of the
 * case is left to give back. The refund guard (pairGuard.ts), the charge page, its refund
 * dialog and the incident view all read it from here.
 */
import { db } from "~/server/db";
import { DEFAULT_WINDOW_MINUTES, liveTwinOf } from "~/server/customers/charges";
import { evidenceDisplay, LIKELY_DOUBLE_CHARGES } from "~/server/customers/evidence";

/** The key of the case of two charges: their ids, sorted, joined by a space (double_charge_claims.case_key). */
export const caseKey = (a: string, b: string) => [a, b].sort().join(" ");

export type RefundNoteView = { kind: "refund" | "again" | "both_halves"; by: string; at: Date; note: string };

export type RefundView = {
  id: string;
  amountCents: number;
  reason: string | null;
  at: Date;
  /** Who: the person who confirmed it in the dashboard, else the API client that asked for it. */
  by: string;
  /** Support's words: the confirm's note first, then any later confirm's (a second tab). */
  notes: RefundNoteView[];
};

export type CaseHalf = {
  id: string;
  amountCents: number;
  currency: string;
  refundedCents: number;
  /** Held by a refund in flight. */
  heldCents: number;
  requestedAt: Date;
  refunds: RefundView[];
};

/** The charges with their refunds and support's notes on them. */
export async function halvesOf(ids: string[]): Promise<Map<string, CaseHalf>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Map();
  const [charges, refunds, notes] = await Promise.all([
    db.charge.findMany({
      where: { id: { in: unique } },
      select: {
        id: true,
        amountCents: true,
        currency: true,
        amountRefundedCents: true,
        refundHeldCents: true,
        requestedAt: true,
        apiClient: { select: { name: true } },
      },
    }),
    db.refund.findMany({ where: { chargeId: { in: unique } }, orderBy: { createdAt: "asc" } }),
    db.refundNote.findMany({ where: { chargeId: { in: unique } }, orderBy: { createdAt: "asc" } }),
  ]);
  const staffIds = [...new Set(notes.flatMap((n) => (n.staffUserId === null ? [] : [n.staffUserId])))];
  const staff = staffIds.length
    ? await db.staffUser.findMany({ where: { id: { in: staffIds } }, select: { id: true, name: true, email: true } })
    : [];
  const staffOf = new Map(staff.map((s) => [s.id, `${s.name} (${s.email})`]));
  const notesOf = (refundId: string) =>
    notes
      .filter((n) => n.refundId === refundId)
      .map((n) => ({
        kind: n.kind,
        by: (n.staffUserId === null ? undefined : staffOf.get(n.staffUserId)) ?? n.staffLabel,
        at: n.createdAt,
        note: n.note,
      }));
  const clientOf = new Map(charges.map((c) => [c.id, c.apiClient.name]));
  return new Map(
    charges.map((c) => [
      c.id,
      {
        id: c.id,
        amountCents: c.amountCents,
        currency: c.currency,
        refundedCents: c.amountRefundedCents,
        heldCents: c.refundHeldCents,
        requestedAt: c.requestedAt,
        refunds: refunds
          .filter((r) => r.chargeId === c.id)
          .map((r) => {
            const said = notesOf(r.id);
            const confirmed = said.find((n) => n.kind !== "again");
            return {
              id: r.id,
              amountCents: r.amountCents,
              reason: r.reason,
              at: r.createdAt,
              by: confirmed?.by ?? `API client ${clientOf.get(c.id)}`,
              notes: said,
            };
          }),
      },
    ]),
  );
}

export type CaseState = "to_refund" | "refunding" | "refunded" | "both_refunded";

/**
 * Where a case stands. The extra charge is one charge's amount: given back is what refunds of either half
 * returned, up to it; left is the rest. A refund of a half, even in flight, resolves the case (the other half
 * warns); both halves refunded is the override's doing.
 */
export function caseStatus(amountCents: number, halves: (CaseHalf | undefined)[]) {
  const present = halves.filter((h): h is CaseHalf => h !== undefined);
  const refunded = present.reduce((n, h) => n + h.refundedCents, 0);
  const touched = present.filter((h) => h.refundedCents + h.heldCents > 0);
  const givenBackCents = Math.min(amountCents, refunded);
  const state: CaseState =
    touched.length === 2
      ? "both_refunded"
      : touched.length === 0
        ? "to_refund"
        : touched[0]!.refundedCents > 0
          ? "refunded"
          : "refunding";
  const first = touched
    .flatMap((h) => h.refunds.map((r) => ({ ...r, chargeId: h.id })))
    .sort((a, b) => a.at.getTime() - b.at.getTime())[0];
  return {
    state,
    resolved: state !== "to_refund",
    /** The first refund made of the case (its charge, when, by whom, the note). */
    firstRefund: first ?? null,
    refundedChargeIds: touched.map((h) => h.id),
    givenBackCents,
    leftCents: amountCents - givenBackCents,
  };
}

export type CaseStatus = ReturnType<typeof caseStatus>;

/**
 * The likely double-charge cases a charge is a half of: the sweeper's stored pairs either way round, and the
 * customer page's live pair while the sweeper has not scanned it yet; each with its other half and status.
 */
export async function casesOfCharge(chargeId: string) {
  const stored = await db.possibleDuplicateCharge.findMany({
    where: {
      OR: [{ chargeId }, { earlierChargeId: chargeId }],
      evidence: { in: [...LIKELY_DOUBLE_CHARGES] },
    },
    select: { chargeId: true, earlierChargeId: true, evidence: true, gapMs: true, amountCents: true },
  });
  const pairs = stored.map((p) => ({
    laterId: p.chargeId,
    earlierId: p.earlierChargeId,
    evidence: evidenceDisplay(p.evidence),
    gapMs: p.gapMs,
    amountCents: p.amountCents,
  }));
  const live = await liveTwinOf(chargeId, DEFAULT_WINDOW_MINUTES);
  if (live?.evidence.likely && !pairs.some((p) => caseKey(p.laterId, p.earlierId) === caseKey(chargeId, live.id))) {
    const [laterId, earlierId] = live.gapMs >= 0 ? [chargeId, live.id] : [live.id, chargeId];
    pairs.push({
      laterId,
      earlierId,
      evidence: live.evidence,
      gapMs: Math.abs(live.gapMs),
      amountCents: live.amountCents,
    });
  }
  const halves = await halvesOf([chargeId, ...pairs.flatMap((p) => [p.laterId, p.earlierId])]);
  return pairs.map((p) => {
    const otherId = p.laterId === chargeId ? p.earlierId : p.laterId;
    return {
      key: caseKey(p.laterId, p.earlierId),
      ...p,
      other: halves.get(otherId) ?? null,
      status: caseStatus(p.amountCents, [halves.get(p.laterId), halves.get(p.earlierId)]),
    };
  });
}

export type ChargeCase = Awaited<ReturnType<typeof casesOfCharge>>[number];
