/**
 * Support's words on a dashboard refund, kept with the refund: the charge page, its refund dialog and the
 * incident view show them (src/server/doubleCharges/cases.ts), since support cannot read the audit log.
 */
import type { RefundNoteKind } from "~/generated/prisma/client";
import type { AuditContext } from "~/server/audit/audit";
import { db } from "~/server/db";

/**
 * Keeps a confirm's note with its refund. A confirm that found the refund made already (a second tab) adds its
 * own, unless it is the same person's same words (the second click of a double click).
 */
export async function keepNote(
  note: { chargeId: string; refundId: string; kind: RefundNoteKind; note: string },
  { actor }: AuditContext,
): Promise<void> {
  const staffUserId = actor.type === "staff" ? actor.id : null;
  const staffLabel = actor.type === "staff" ? actor.email : actor.type === "anonymous" ? "anonymous" : actor.name;
  const said = await db.refundNote.findFirst({ where: { refundId: note.refundId, staffUserId, note: note.note } });
  if (said) return;
  await db.refundNote.create({ data: { ...note, staffUserId, staffLabel: staffLabel.slice(0, 255) } });
}
