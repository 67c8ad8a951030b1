/**
 * The ledger's findings as the dashboard reads and works them: their wording,
 * the open ones behind a record (a charge's or a request's page warns of
 * them), and closing one with a note, audited in the same transaction.
 */
import type { LedgerMismatchKind } from "~/generated/prisma/client";
import { type AuditContext, recordAudit } from "~/server/audit/audit";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";

export const MISMATCH_LABELS: Record<LedgerMismatchKind, string> = {
  gateway_charge_without_app_charge: "Gateway charge the app does not know",
  app_charge_without_gateway_charge: "App charge the gateway does not have",
  amount_or_currency_mismatch: "Amount or currency differs",
  several_gateway_charges_for_one_operation: "Several gateway charges for one operation",
  gateway_refund_without_app_refund: "Gateway refund the app does not know",
  app_refund_without_gateway_refund: "App refund the gateway does not have",
  refund_amount_mismatch: "Refund amount differs",
  several_gateway_refunds_for_one_operation: "Several gateway refunds for one operation",
  refunds_exceed_charge: "Refunds exceed their charge, or do not add up",
  refund_after_write_off: "Refunded after the client was told no refund was made",
};

/** The open mismatches that name any of these charges, requests or gateway charges (indexed lookups). */
export async function openMismatchesOf(of: {
  chargeIds?: string[];
  requestIds?: bigint[];
  gatewayChargeIds?: string[];
}) {
  const or = [
    ...(of.chargeIds?.length ? [{ chargeId: { in: of.chargeIds } }] : []),
    ...(of.requestIds?.length ? [{ requestId: { in: of.requestIds } }] : []),
    ...(of.gatewayChargeIds?.length ? [{ gatewayChargeId: { in: of.gatewayChargeIds } }] : []),
  ];
  if (or.length === 0) return [];
  const rows = await db.ledgerMismatch.findMany({
    where: { resolvedAt: null, OR: or },
    select: { id: true, kind: true, detectedAt: true, evidence: true },
    orderBy: { id: "desc" },
    take: 20,
  });
  return rows.map((m) => ({
    id: String(m.id),
    kind: m.kind,
    label: MISMATCH_LABELS[m.kind],
    detectedAt: m.detectedAt,
    evidence: JSON.parse(m.evidence) as Record<string, unknown>,
  }));
}

/**
 * An engineer closes a mismatch the app cannot put right itself (money to refund at the provider, say), saying
 * what was done; the audit log keeps who, when and the note, in the same transaction. Only an open one: the
 * conditional UPDATE loses to a concurrent closing, and the table's trigger refuses any later rewrite of who
 * closed it (migration 20261205510000_mismatch_closing_once); a later run that finds it again only notes so.
 */
export async function resolveMismatch(id: bigint, note: string, by: { staffId: number; audit: AuditContext }) {
  await db.$transaction(async (tx) => {
    const mismatch = await tx.ledgerMismatch.findFirst({ where: { id, resolvedAt: null } });
    const updated = await tx.ledgerMismatch.updateMany({
      where: { id, resolvedAt: null },
      data: { resolvedAt: new Date(), resolvedBy: by.staffId, resolutionNote: note },
    });
    if (!mismatch || updated.count === 0) throw new DomainError("not_found", "No open mismatch with this id.");
    await recordAudit(
      by.audit,
      {
        action: "ledger_mismatch.resolved",
        target: { type: "ledger_mismatch", id: String(id) },
        details: {
          note,
          kind: mismatch.kind,
          chargeId: mismatch.chargeId,
          requestId: mismatch.requestId === null ? null : String(mismatch.requestId),
          gatewayChargeId: mismatch.gatewayChargeId,
        },
      },
      tx,
    );
  });
  return { resolved: true };
}
