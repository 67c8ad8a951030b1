import { z } from "zod";
import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { db, queryRows, type Statement } from "~/server/db";
import { DomainError } from "~/server/domainError";

/**
 * The rollout of the Idempotency-Key header: `optional` accepts keyless charges
 * (and counts them), `required` rejects them with 400. Stored in the database so
 * every app instance switches at once, without a deploy. Engineers can also
 * require the header of one API client while the global mode stays optional
 * (`api_clients.key_required_since`), so a client that has reached zero keyless
 * traffic is protected without waiting for the others.
 */
export const idempotencyModeSchema = z.enum(["optional", "required"]);
export type IdempotencyMode = z.infer<typeof idempotencyModeSchema>;

const SETTING = "idempotency_mode";
export const DEFAULT_MODE: IdempotencyMode = "optional";

const parseMode = (value: unknown): IdempotencyMode => idempotencyModeSchema.safeParse(value).data ?? DEFAULT_MODE;

/** The global mode (the dashboard's status). */
export async function getIdempotencyMode(): Promise<IdempotencyMode> {
  const row = await db.setting.findUnique({ where: { name: SETTING } });
  return parseMode(row?.value);
}

/**
 * The mode a keyless charge of `apiClientId` is under: `required` when the global mode says so or that client's
 * header is required (per-client enforcement). One read through the driver (Prisma's costs more CPU than the
 * query). A keyless request that goes on to claim learns it from its claim instead (operations/keyless.ts); this is
 * for the ones answered before any claim (an invalid body, a client gone).
 */
export async function modeForKeylessRequest(apiClientId: number): Promise<IdempotencyMode> {
  return modeOfRows(await queryRows(keylessModeStatement(apiClientId)));
}

/**
 * The read of the mode a keyless charge of `apiClientId` is under (modeOfRows decodes it). A plain, non-locking read:
 * never in a claim's statement (an INSERT ... SELECT would lock the settings row), but sent beside one
 * (operations/keyless.ts).
 */
export function keylessModeStatement(apiClientId: number): Statement {
  return {
    sql: `SELECT (SELECT value FROM settings WHERE name = ?) AS global,
                 (SELECT key_required_since IS NOT NULL FROM api_clients WHERE id = ?) AS client_required`,
    values: [SETTING, apiClientId],
  };
}

export function modeOfRows(rows: unknown[]): IdempotencyMode {
  const row = rows[0] as { global: string | null; client_required: number | bigint | null } | undefined;
  return row?.client_required ? "required" : parseMode(row?.global);
}

/** Every switch says why: the reason is kept in the audit log. */
export const switchReasonSchema = z.string().trim().min(3, "say why (at least 3 characters)").max(500);

/**
 * Switches the mode and writes the audit entry, atomically. The setting's row
 * is locked first (it always exists: the migration inserts it), so two
 * switches at once are serialised and each entry's `from` is what it replaced.
 * A switch to the mode already in force is refused: it would record a change
 * that did not happen (and usually means someone else just switched it).
 */
export async function setIdempotencyMode(mode: IdempotencyMode, context: AuditContext, reason: string) {
  // In case someone deleted it; outside the transaction, whose lock must be the first it takes on the row.
  await db.$executeRaw`INSERT IGNORE INTO settings (name, value) VALUES (${SETTING}, ${DEFAULT_MODE})`;
  return db.$transaction(async (tx) => {
    const [current] = await tx.$queryRaw<{ value: string }[]>`
      SELECT value FROM settings WHERE name = ${SETTING} FOR UPDATE`;
    const fromMode = parseMode(current?.value);
    if (fromMode === mode) throw new DomainError("conflict", `The mode is already ${mode}.`);
    await tx.setting.update({ where: { name: SETTING }, data: { value: mode } });
    const details = { from: fromMode, to: mode, reason };
    await recordAudit(context, { action: "mode.changed", target: { type: "setting", id: SETTING }, details }, tx);
    return { fromMode, toMode: mode };
  });
}

/**
 * Requires the header of one client (or gives it back to the global mode),
 * audited like the global switch; the client's row is locked so that each
 * entry's `from` is what it replaced. Refused when nothing would change.
 */
export async function setClientKeyRequired(
  apiClientId: number,
  required: boolean,
  context: AuditContext,
  reason: string,
) {
  return db.$transaction(async (tx) => {
    const [client] = await tx.$queryRaw<{ key_required_since: Date | null; name: string }[]>`
      SELECT key_required_since, name FROM api_clients WHERE id = ${apiClientId} FOR UPDATE`;
    if (!client) throw new DomainError("not_found", "No such API client.");
    const wasRequired = client.key_required_since !== null;
    if (wasRequired === required) {
      const state = required ? "already required" : "not required (it follows the global mode)";
      throw new DomainError("conflict", `The header is ${state} for ${client.name}.`);
    }
    await tx.apiClient.update({ where: { id: apiClientId }, data: { keyRequiredSince: required ? new Date() : null } });
    const details = { from: wasRequired ? "required" : "global", to: required ? "required" : "global", reason };
    await recordAudit(
      context,
      { action: "client_mode.changed", target: { type: "api_client", id: apiClientId }, details },
      tx,
    );
    return { apiClientId, required };
  });
}
