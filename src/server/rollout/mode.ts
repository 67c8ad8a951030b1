import { z } from "zod";
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

/** Switches the mode and writes the audit log entry, atomically. */
export async function setIdempotencyMode(mode: IdempotencyMode, staffUserId: number) {
  return db.$transaction(async (tx) => {
    const current = await tx.setting.findUnique({ where: { name: SETTING } });
    const fromMode = idempotencyModeSchema.safeParse(current?.value).data ?? DEFAULT_MODE;
    await tx.setting.upsert({
      where: { name: SETTING },
      create: { name: SETTING, value: mode },
      update: { value: mode },
    });
    return tx.rolloutAuditLog.create({ data: { staffUserId, fromMode, toMode: mode } });
  });
}
