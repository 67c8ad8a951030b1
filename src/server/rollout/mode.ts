import { z } from "zod";
import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { db, queryRows } from "~/server/db";

/**
 * The rollout of the Idempotency-Key header: `optional` accepts keyless charges
 * (and counts them), `required` rejects them with 400. Stored in the database so
 * every app instance switches at once, without a deploy.
 */
export const idempotencyModeSchema = z.enum(["optional", "required"]);
export type IdempotencyMode = z.infer<typeof idempotencyModeSchema>;

const SETTING = "idempotency_mode";
export const DEFAULT_MODE: IdempotencyMode = "optional";

export async function getIdempotencyMode(): Promise<IdempotencyMode> {
  const row = await db.setting.findUnique({ where: { name: SETTING } });
  return modeOf(row?.value);
}

const modeOf = (value: unknown): IdempotencyMode => idempotencyModeSchema.safeParse(value).data ?? DEFAULT_MODE;

/** The mode as a keyless charge reads it: one read through the driver (Prisma's costs more CPU than the query). */
export async function currentModeForRequest(): Promise<IdempotencyMode> {
  const sql = "SELECT value FROM settings WHERE name = ?";
  const [row] = await queryRows<{ value: string }>({ sql, values: [SETTING] });
  return modeOf(row?.value);
}

/**
 * Switches the mode and writes the audit entry, atomically. The setting's row
 * is locked first (it always exists: the migration inserts it), so two
 * switches at once are serialised and each entry's `from` is what it replaced.
 */
export async function setIdempotencyMode(mode: IdempotencyMode, context: AuditContext) {
  // In case someone deleted it; outside the transaction, whose lock must be the first it takes on the row.
  await db.$executeRaw`INSERT IGNORE INTO settings (name, value) VALUES (${SETTING}, ${DEFAULT_MODE})`;
  return db.$transaction(async (tx) => {
    const [current] = await tx.$queryRaw<{ value: string }[]>`
      SELECT value FROM settings WHERE name = ${SETTING} FOR UPDATE`;
    const fromMode = idempotencyModeSchema.safeParse(current?.value).data ?? DEFAULT_MODE;
    await tx.setting.update({ where: { name: SETTING }, data: { value: mode } });
    const entry = { fromMode, toMode: mode };
    const details = { from: fromMode, to: mode };
    await recordAudit(context, { action: "mode.changed", target: { type: "setting", id: SETTING }, details }, tx);
    return entry;
  });
}
