import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";

/**
 * An engineer closes a mismatch the app cannot put right itself (money to
 * refund at the provider, say), saying what was done; audited with the note, in
 * the same transaction. Only an open one: the conditional UPDATE loses to a
 * concurrent closing, and the table's trigger refuses any later rewrite of who
 * closed it (migration 20261205510000_mismatch_closing_once).
 */
export async function resolveMismatch(id: bigint, staffId: number, note: string, context: AuditContext) {
  await db.$transaction(async (tx) => {
    const updated = await tx.ledgerMismatch.updateMany({
      where: { id, resolvedAt: null },
      data: { resolvedAt: new Date(), resolvedBy: staffId, resolutionNote: note },
    });
    if (updated.count === 0) throw new DomainError("not_found", "No open mismatch with this id.");
    await recordAudit(
      context,
      { action: "ledger_mismatch.resolved", target: { type: "ledger_mismatch", id: String(id) }, details: { note } },
      tx,
    );
  });
}
