/**
 * The audit log: who did what to access and to the API's behaviour, when, from
 * where. Rows are only ever inserted; the app's database user cannot UPDATE or
 * DELETE them (see scripts/lib/appUser.ts).
 */
import type { Prisma } from "~/generated/prisma/client";
import { db } from "~/server/db";
import { NO_REQUEST, type RequestInfo } from "~/server/http/requestInfo";

export const AUDIT_ACTIONS = [
  "login.succeeded",
  "login.failed",
  "login.blocked",
  "logout",
  "session.revoked",
  "password.changed",
  "password.check_failed",
  "two_factor.enrolled",
  "two_factor.reset",
  "staff.created",
  "staff.role_changed",
  "staff.disabled",
  "staff.enabled",
  "api_client.created",
  "api_key.issued",
  "api_key.rotated",
  "api_key.revoked",
  "mode.changed",
  "client_mode.changed",
  "ledger_mismatch.resolved",
  "ledger.late_charge_healed",
  "ledger.late_refund_recorded",
  "refund.created",
  "refund.failed",
  "refund.requested",
  "refund.approved",
  "refund.rejected",
  "refund.limited",
  "webhook_endpoint.created",
  "webhook_endpoint.updated",
  "webhook_endpoint.secret_rotated",
  "webhook_endpoint.deleted",
  "webhook_endpoint.test_sent",
  "webhook_delivery.sent_again",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type AuditActor =
  | { type: "staff"; id: number; email: string }
  | { type: "cli"; name: string }
  /** The app itself, acting on a rule (the reconciliation healing a late charge). */
  | { type: "system"; name: string }
  /** Nobody signed in, e.g. a failed login (the e-mail that was tried goes in the details, as data). */
  | { type: "anonymous" };

/** Who is acting and from where: what every audited operation takes. */
export type AuditContext = { actor: AuditActor; request: RequestInfo };

export function staffContext(user: { id: number; email: string }, request: RequestInfo = NO_REQUEST): AuditContext {
  return { actor: { type: "staff", id: user.id, email: user.email }, request };
}

/** An API client acting on its own settings through the API (its webhook endpoints). */
export function apiClientContext(apiClientId: number, request: RequestInfo = NO_REQUEST): AuditContext {
  return { actor: { type: "system", name: `api client #${apiClientId}` }, request };
}

/** A command-line action; `name` says who ran it (scripts/lib/cli.ts: `--actor`, or the OS user and host). */
export function cliContext(name: string): AuditContext {
  return { actor: { type: "cli", name }, request: NO_REQUEST };
}

export type AuditEntry = {
  action: AuditAction;
  target?: {
    type:
      | "staff_user"
      | "api_client"
      | "api_key"
      | "session"
      | "setting"
      | "charge"
      | "ledger_mismatch"
      | "webhook_endpoint"
      | "webhook_delivery";
    id: string | number;
  };
  details?: Record<string, unknown>;
};

type Writer = Pick<Prisma.TransactionClient, "auditEvent">;

/** Writes one entry; pass the transaction client to make it part of the change it records. */
export async function recordAudit(context: AuditContext, entry: AuditEntry, client: Writer = db): Promise<void> {
  const { actor, request } = context;
  await client.auditEvent.create({
    data: {
      action: entry.action,
      actorType: actor.type,
      actorStaffId: actor.type === "staff" ? actor.id : null,
      actorLabel: actor.type === "staff" ? actor.email : actor.type === "anonymous" ? null : actor.name.slice(0, 255),
      targetType: entry.target?.type ?? null,
      targetId: entry.target ? String(entry.target.id) : null,
      details: entry.details ? JSON.stringify(entry.details) : null,
      ipAddress: request.address,
      userAgent: request.userAgent,
    },
  });
}

export type AuditFilter = {
  action?: AuditAction;
  /** Any of these actions (with `action`, that one too). */
  actions?: readonly AuditAction[];
  /** Part of the actor's e-mail or CLI name. */
  actor?: string;
  since?: Date;
  until?: Date;
  /** The id of the last entry already shown (entries come newest first). */
  cursor?: string | null;
  limit: number;
};

/** A page of entries, newest first, with their details parsed. */
export async function listAudit(filter: AuditFilter) {
  const rows = await db.auditEvent.findMany({
    where: {
      ...(filter.action || filter.actions
        ? { action: { in: [...(filter.action ? [filter.action] : []), ...(filter.actions ?? [])] } }
        : {}),
      ...(filter.actor ? { actorLabel: { contains: filter.actor } } : {}),
      ...(filter.since || filter.until ? { createdAt: { gte: filter.since, lte: filter.until } } : {}),
      ...(filter.cursor ? { id: { lt: BigInt(filter.cursor) } } : {}),
    },
    orderBy: { id: "desc" },
    take: filter.limit + 1,
  });
  const items = rows.slice(0, filter.limit).map(({ details, ...row }) => ({
    ...row,
    id: String(row.id),
    details: details ? (JSON.parse(details) as Record<string, unknown>) : null,
  }));
  return { items, nextCursor: rows.length > filter.limit ? items[items.length - 1]!.id : null };
}
