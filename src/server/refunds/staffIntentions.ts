/**
 * The controls on refunds people make in the dashboard (issue 43), over one table, staff_refund_intentions: a
 * refund a person asks for is written down first, under the key its operation will run with, with who, what and
 * why. Then:
 * - a second factor: whoever refunds must have signed in with a TOTP code (STAFF_REFUND_REQUIRE_2FA);
 * - limits per person: refunds and amount in any hour and any 24 hours (STAFF_REFUND_MAX_*), counted from these
 *   rows under the person's own row lock, so requests sent at once cannot all pass;
 * - four eyes: above STAFF_REFUND_APPROVAL_ABOVE_CENTS the intention waits (`awaiting_approval`) until another
 *   staff member approves it (nobody approves their own), and is then sent once, under its key;
 * - the audit: the completion of the operation writes the entry from this row
 *   (src/server/audit/staffRefundAudit.ts), however it finishes; a request awaiting approval, an approval and a
 *   rejection are audited here, each once.
 */
import { env } from "~/env";
import type { StaffRefundIntention } from "~/generated/prisma/client";
import { type AuditContext, recordAudit } from "~/server/audit/audit";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";

export type RefundControls = {
  requireSecondFactor: boolean;
  perHour: { count: number; cents: number };
  perDay: { count: number; cents: number };
  approvalAboveCents: number;
};

/** The controls in force (the dashboard shows them beside each person's use of them). */
export function refundControls(): RefundControls {
  return {
    requireSecondFactor: env.STAFF_REFUND_REQUIRE_2FA,
    perHour: { count: env.STAFF_REFUND_MAX_PER_HOUR, cents: env.STAFF_REFUND_MAX_CENTS_PER_HOUR },
    perDay: { count: env.STAFF_REFUND_MAX_PER_DAY, cents: env.STAFF_REFUND_MAX_CENTS_PER_DAY },
    approvalAboveCents: env.STAFF_REFUND_APPROVAL_ABOVE_CENTS,
  };
}

/** Who is asking, as the session says: staff only, and whether this session passed the second factor. */
export type Requester = { id: number; email: string; twoFactorVerified?: boolean };

/** Refused unless the session passed the TOTP check, when the controls ask for it. */
export function requireSecondFactor(user: Requester): void {
  if (refundControls().requireSecondFactor && !user.twoFactorVerified) {
    throw new DomainError(
      "invalid",
      "Refunds need two-factor sign-in: set it up under Account, then sign in again with a code.",
    );
  }
}

type Db = Pick<typeof db, "$queryRaw" | "staffRefundIntention">;

/** A person's refunds (not rejected) in the last hour and the last 24 hours: how many, and how much. */
export async function usageOf(staffId: number, client: Db = db) {
  const [row] = await client.$queryRaw<
    { hourCount: bigint; hourCents: unknown; dayCount: bigint; dayCents: unknown }[]
  >`
    SELECT COUNT(CASE WHEN created_at > UTC_TIMESTAMP(6) - INTERVAL 1 HOUR THEN 1 END) AS hourCount,
           COALESCE(SUM(CASE WHEN created_at > UTC_TIMESTAMP(6) - INTERVAL 1 HOUR THEN amount_cents END), 0)
             AS hourCents,
           COUNT(*) AS dayCount, COALESCE(SUM(amount_cents), 0) AS dayCents
      FROM staff_refund_intentions
     WHERE requested_by_staff_id = ${staffId} AND created_at > UTC_TIMESTAMP(6) - INTERVAL 1 DAY
       AND status <> 'rejected'`;
  return {
    hour: { count: Number(row?.hourCount ?? 0), cents: Number(row?.hourCents ?? 0) },
    day: { count: Number(row?.dayCount ?? 0), cents: Number(row?.dayCents ?? 0) },
  };
}

/** Why one more refund of `amountCents` would go over a limit, or null. */
function overLimit(usage: Awaited<ReturnType<typeof usageOf>>, amountCents: number, limits: RefundControls) {
  const money = (cents: number) => (cents / 100).toFixed(2);
  if (usage.hour.count + 1 > limits.perHour.count) return `at most ${limits.perHour.count} refunds an hour`;
  if (usage.day.count + 1 > limits.perDay.count) return `at most ${limits.perDay.count} refunds a day`;
  if (usage.hour.cents + amountCents > limits.perHour.cents) {
    return `at most ${money(limits.perHour.cents)} an hour (${money(usage.hour.cents)} refunded in the last hour)`;
  }
  if (usage.day.cents + amountCents > limits.perDay.cents) {
    return `at most ${money(limits.perDay.cents)} a day (${money(usage.day.cents)} refunded in the last 24 hours)`;
  }
  return null;
}

export type NewIntention = {
  key: string;
  chargeId: string;
  amountCents: number;
  currency: string;
  reason: string;
  note: string;
  /** JSON-able facts the audit entry carries too (an override's cases). */
  details?: Record<string, unknown>;
};

/**
 * Writes the intention down, or finds it (a second click, a second tab: the same key, the same intention, counted
 * once). A new one must fit the person's limits, checked and written under their staff row's lock; above the
 * threshold it awaits approval (audited as `refund.requested`).
 */
export async function admitIntention(
  intention: NewIntention,
  user: Requester,
  context: AuditContext,
): Promise<{ intention: StaffRefundIntention; fresh: boolean }> {
  const key = Buffer.from(intention.key);
  const limits = refundControls();
  const admitted = await db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM staff_users WHERE id = ${user.id} FOR UPDATE`;
    const existing = await tx.staffRefundIntention.findUnique({ where: { idempotencyKey: key } });
    if (existing) return { intention: existing, fresh: false };
    const over = overLimit(await usageOf(user.id, tx), intention.amountCents, limits);
    if (over) return { over };
    const awaiting = intention.amountCents > limits.approvalAboveCents;
    const created = await tx.staffRefundIntention.create({
      data: {
        idempotencyKey: key,
        chargeId: intention.chargeId,
        amountCents: intention.amountCents,
        currency: intention.currency,
        reason: intention.reason,
        note: intention.note,
        details: intention.details ? JSON.stringify(intention.details) : null,
        requestedByStaffId: user.id,
        requestedByLabel: user.email.slice(0, 255),
        ipAddress: context.request.address,
        userAgent: context.request.userAgent,
        status: awaiting ? "awaiting_approval" : "submitted",
      },
    });
    if (awaiting) {
      const details = {
        request: String(created.id),
        amount_cents: intention.amountCents,
        currency: intention.currency,
        reason: intention.reason,
        note: intention.note,
        approval_above_cents: limits.approvalAboveCents,
      };
      await recordAudit(
        context,
        { action: "refund.requested", target: { type: "charge", id: intention.chargeId }, details },
        tx,
      );
    }
    return { intention: created, fresh: true };
  });
  if ("over" in admitted) {
    // Audited outside the transaction, which wrote nothing else: a refusal is on the record too.
    const details = { amount_cents: intention.amountCents, currency: intention.currency, limit: admitted.over };
    await recordAudit(context, {
      action: "refund.limited",
      target: { type: "charge", id: intention.chargeId },
      details,
    });
    throw new DomainError("throttled", `Refund limit reached: ${admitted.over}. Ask another staff member, or wait.`);
  }
  return admitted;
}

/**
 * A second person's decision on a request awaiting approval: written once (the first decision wins; a second
 * approval of an approved request is told so and changes nothing), never by the requester, audited.
 */
export async function decide(
  id: bigint,
  decision: { approve: boolean; note?: string },
  user: Requester,
  context: AuditContext,
): Promise<StaffRefundIntention> {
  return db.$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<{ id: bigint }[]>`
      SELECT id FROM staff_refund_intentions WHERE id = ${id} FOR UPDATE`;
    if (!row) throw new DomainError("not_found", `There is no refund request ${id}.`);
    const intention = await tx.staffRefundIntention.findUniqueOrThrow({ where: { id } });
    if (intention.requestedByStaffId === user.id) {
      throw new DomainError("conflict", "Nobody approves their own refund: another staff member must decide.");
    }
    if (intention.status !== "awaiting_approval") {
      if (decision.approve && intention.status === "approved") return intention; // a second click of the approval
      throw new DomainError("conflict", `This request was ${intention.status.replace("_", " ")} already.`);
    }
    const decided = await tx.staffRefundIntention.update({
      where: { id },
      data: {
        status: decision.approve ? "approved" : "rejected",
        decidedByStaffId: user.id,
        decidedByLabel: user.email.slice(0, 255),
        decidedAt: new Date(),
        decisionNote: decision.note ?? null,
      },
    });
    await recordAudit(
      context,
      {
        action: decision.approve ? "refund.approved" : "refund.rejected",
        target: { type: "charge", id: intention.chargeId },
        details: {
          request: String(id),
          requested_by: intention.requestedByLabel,
          amount_cents: intention.amountCents,
          currency: intention.currency,
          note: decision.note ?? null,
        },
      },
      tx,
    );
    return decided;
  });
}

/** Requests awaiting approval, oldest first (the dashboard's Approvals page). */
export async function awaitingApproval(limit = 100) {
  const rows = await db.staffRefundIntention.findMany({
    where: { status: "awaiting_approval" },
    orderBy: { createdAt: "asc" },
    take: limit,
  });
  return rows.map(({ idempotencyKey: _key, details: _details, ipAddress: _ip, userAgent: _ua, ...row }) => ({
    ...row,
    id: String(row.id),
  }));
}
