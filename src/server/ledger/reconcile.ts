/**
 * The ledger reconciliation: the gateway's charge list for a window, compared
 * with the app's charges, the way a payment system reconciles its ledger with
 * its processor's. Finds:
 * - a gateway charge without an app charge (money the app does not know of),
 * - an app charge without a gateway charge (a charge the app invented),
 * - an amount or currency that differs between the two,
 * - more than one gateway charge for one operation (a double charge).
 * It repairs what it can prove: a gateway charge whose derived key names a
 * record nobody is finishing is recorded, and the record completes with the
 * real answer (as the sweeper would). The rest is stored as mismatches with
 * their evidence, for people to look at (ledger router, dashboard).
 */
import { hostname } from "node:os";
import { env } from "~/env";
import type { Charge, Refund } from "~/generated/prisma/client";
import { chargeFromGateway } from "~/server/charges/chargeRows";
import { db, isDuplicateKeyError } from "~/server/db";
import { gateway, type ListedGatewayCharge } from "~/server/gateway";
import { finishUnfinished, type IdempotencyRecord } from "~/server/idempotency";
import { settleRecord } from "~/server/moneyRoutes";
import { log } from "~/server/observability/log";
import type { Finding } from "./finding";
import { checkGatewayIdentity } from "./gatewayIdentity";
import { healLateCharge } from "./healLateCharge";
import { ownerOf } from "./owner";
import { reconcileRefunds } from "./reconcileRefunds";

export type { Finding };

export type ReconciliationResult = {
  runId: number;
  window: { since: Date; until: Date };
  gatewayCharges: number;
  appCharges: number;
  gatewayRefunds: number;
  appRefunds: number;
  /** App charges of the window that the gateway's list of it did not show, and why that is in order. */
  unlisted: UnlistedAppCharges;
  repaired: number;
  /** Late charges of written-off operations refunded by this run (healLateCharge.ts). */
  healed: number;
  findings: Finding[];
};

export type UnlistedAppCharges = {
  /** Declines the gateway kept nothing of (Stripe refuses a payment method it does not know without an object). */
  declined: number;
  /** Charges whose gateway charge is older than the window (found under their key): a key-lifetime test, say. */
  olderThanWindow: number;
};

/**
 * The counts of a reconciliation, in words: why the two counts may differ with nothing wrong. The one place
 * that says it (the test run's closing check, the fault run and `npm run reconcile` all print this).
 */
export function describeCounts(
  result: Pick<ReconciliationResult, "gatewayCharges" | "appCharges" | "gatewayRefunds" | "appRefunds" | "unlisted">,
) {
  const { declined, olderThanWindow } = result.unlisted;
  const why =
    declined + olderThanWindow > 0
      ? ` (not in the gateway's list of the window: ${declined} declined with nothing kept at the gateway, ` +
        `${olderThanWindow} charged at the gateway before the window)`
      : "";
  const refunds = `gateway refunds ${result.gatewayRefunds}, app refunds ${result.appRefunds}`;
  return `gateway charges ${result.gatewayCharges}, app charges ${result.appCharges}${why}, ${refunds}`;
}

const PAGE = 100;
const fingerprint = (f: Pick<Finding, "kind" | "subject">) => `${f.kind}:${f.subject}`.slice(0, 160);

function compare(gatewayCharge: ListedGatewayCharge, appCharge: Charge): Finding | null {
  const same =
    gatewayCharge.amountCents === appCharge.amountCents &&
    gatewayCharge.currency.toLowerCase() === appCharge.currency.toLowerCase() &&
    gatewayCharge.id === appCharge.gatewayChargeId;
  if (same) return null;
  return {
    kind: "amount_or_currency_mismatch",
    subject: gatewayCharge.id,
    gatewayChargeId: gatewayCharge.id,
    chargeId: appCharge.id,
    requestId: appCharge.idempotentRequestId ?? undefined,
    evidence: {
      gateway: { id: gatewayCharge.id, amount_cents: gatewayCharge.amountCents, currency: gatewayCharge.currency },
      app: {
        id: appCharge.id,
        gateway_charge_id: appCharge.gatewayChargeId,
        amount_cents: appCharge.amountCents,
        currency: appCharge.currency,
      },
    },
  };
}

/**
 * A declined gateway charge that arrived after its operation was written off: moved no money, so the stored
 * answer is true; its failed charge row keeps gateway and app charges 1:1. A run that lost the race to record it
 * found it recorded.
 */
async function recordLateDecline(record: IdempotencyRecord, charge: ListedGatewayCharge): Promise<"repaired"> {
  await db.charge.create({ data: chargeFromGateway(record, charge, charge.idempotencyKey) }).catch((error: unknown) => {
    if ((error as { code?: string }).code !== "P2002") throw error;
  });
  return "repaired";
}

/** A late charge given back (healLateCharge.ts): the finding it was, and the refund that healed it. */
type Healed = { healed: Refund; finding: Finding };

/** A gateway charge the app has no row for: repaired or healed when provable, else a finding. */
async function settleOrphan(
  charge: ListedGatewayCharge,
  heal: boolean,
): Promise<"repaired" | "in_flight" | "in_order" | Healed | Finding> {
  const record = await ownerOf(charge);
  const finding = (why: string, extra: Record<string, unknown> = {}): Finding => ({
    kind: "gateway_charge_without_app_charge",
    subject: charge.id,
    gatewayChargeId: charge.id,
    requestId: record?.id,
    evidence: {
      why,
      gateway: {
        id: charge.id,
        key: charge.idempotencyKey,
        amount_cents: charge.amountCents,
        currency: charge.currency,
        created_at: charge.createdAt.toISOString(),
        metadata: charge.metadata,
      },
      ...extra,
    },
  });
  if (!record) return finding("its metadata names no record of this app whose derived key is the charge's key");
  switch (record.phase.name) {
    case "held":
      return "in_flight"; // its request is completing it right now; a later run looks again
    case "complete": {
      // The page's app charges were read before this record: it may have completed with the charge since.
      const recorded = await db.charge.findUnique({ where: { gatewayIdempotencyKey: charge.idempotencyKey } });
      if (recorded) return compare(charge, recorded) ?? "in_order";
      const writtenOff = record.phase.finishedBy === "abandoned";
      const found = finding(
        writtenOff
          ? "charged after the operation was answered 'no charge was made'"
          : "the record completed without it",
        { record: { id: String(record.id), phase: record.phase } },
      );
      // Declined after the write-off: "no charge was made" holds, and the attempt is recorded as any decline is.
      if (writtenOff && charge.status !== "succeeded") return recordLateDecline(record, charge);
      if (!writtenOff || !heal) return found;
      // A heal the gateway would not make (yet) leaves the finding open; the next run tries again.
      const healed = await healLateCharge(record, charge).catch((error: unknown) => {
        log.error({ err: error, recordId: String(record.id), gatewayCharge: charge.id }, "late charge not healed");
        return null;
      });
      return healed ? { healed, finding: found } : found;
    }
    case "released":
    case "lease_expired": {
      // Nobody is finishing it: finish it as the sweeper would, which asks the gateway and finds this charge.
      const result = await finishUnfinished(record, settleRecord);
      return result.kind === "finished" ? "repaired" : "in_flight";
    }
  }
}

/**
 * More than one gateway charge for one operation: the same client's key
 * charged twice within the key's lifetime. The one legitimate way is a key
 * whose first operation completed, expired and was deleted, after which the
 * key names a new operation: then the earlier charge has its app charge, and
 * that charge no longer points at a record. Keyless charges are each their own
 * operation.
 */
async function doubleCharges(charges: ListedGatewayCharge[]): Promise<Finding[]> {
  const byOperation = new Map<string, ListedGatewayCharge[]>();
  for (const c of charges) {
    if (!c.metadata?.idempotencyKey) continue;
    const operation = `${c.metadata.apiClientId}\n${c.metadata.idempotencyKey}`;
    byOperation.set(operation, [...(byOperation.get(operation) ?? []), c]);
  }
  const ttlMs = env.IDEMPOTENCY_KEY_TTL_HOURS * 3_600_000;
  const findings: Finding[] = [];
  // One record is one operation, keyed or keyless: two gateway charges naming it are a double charge, whenever
  // they were made (a provider that forgot the key after its own lifetime, say).
  const byRecord = new Map<string, ListedGatewayCharge[]>();
  for (const c of charges) {
    if (!c.metadata?.requestId || c.metadata.requestId === "0") continue;
    byRecord.set(c.metadata.requestId, [...(byRecord.get(c.metadata.requestId) ?? []), c]);
  }
  const reported = new Set<string>();
  for (const group of byRecord.values()) {
    const sorted = group.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    for (const second of sorted.slice(1)) {
      reported.add(second.id);
      findings.push({
        kind: "several_gateway_charges_for_one_operation",
        subject: second.id,
        gatewayChargeId: second.id,
        evidence: {
          request_id: second.metadata!.requestId,
          charges: sorted.map((c) => ({ id: c.id, key: c.idempotencyKey, created_at: c.createdAt.toISOString() })),
        },
      });
    }
  }
  for (const group of byOperation.values()) {
    const sorted = group.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
    for (let i = 1; i < sorted.length; i++) {
      const [first, second] = [sorted[i - 1]!, sorted[i]!];
      if (reported.has(second.id) || second.createdAt.getTime() - first.createdAt.getTime() >= ttlMs) continue;
      const firstRecorded = await db.charge.findUnique({ where: { gatewayIdempotencyKey: first.idempotencyKey } });
      // Completed and expired: a new operation.
      if (firstRecorded && firstRecorded.idempotentRequestId === null) continue;
      findings.push({
        kind: "several_gateway_charges_for_one_operation",
        subject: second.id,
        gatewayChargeId: second.id,
        evidence: {
          operation: { api_client_id: second.metadata!.apiClientId, idempotency_key: second.metadata!.idempotencyKey },
          charges: [first, second].map((c) => ({
            id: c.id,
            key: c.idempotencyKey,
            created_at: c.createdAt.toISOString(),
            request_id: c.metadata?.requestId,
          })),
        },
      });
    }
  }
  return findings;
}

/** App charges of the window whose gateway charge the list did not show: asked of the gateway one by one. */
async function appChargesWithoutGatewayCharge(
  window: { since: Date; until: Date },
  seenKeys: Set<string>,
  inOrder: Set<string>,
) {
  const findings: Finding[] = [];
  const unlisted: UnlistedAppCharges = { declined: 0, olderThanWindow: 0 };
  let count = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await db.charge.findMany({
      where: { createdAt: { gte: window.since, lt: window.until }, ...(cursor ? { id: { gt: cursor } } : {}) },
      orderBy: { id: "asc" },
      take: PAGE,
    });
    count += page.length;
    for (const charge of page) {
      const inOrderNow = () =>
        inOrder.add(fingerprint({ kind: "app_charge_without_gateway_charge", subject: charge.id }));
      // A decline moved no money; a provider may refuse one without keeping any object of it (Stripe, for
      // a payment method it does not know), so only a succeeded app charge must have its gateway charge.
      if (seenKeys.has(charge.gatewayIdempotencyKey)) {
        inOrderNow();
        continue;
      }
      if (charge.status === "failed") {
        unlisted.declined += 1;
        inOrderNow();
        continue;
      }
      // Its gateway charge may be older than the window (the app row is written after the gateway answered).
      const lookup = await gateway.findCharge({
        idempotencyKey: charge.gatewayIdempotencyKey,
        // An empty requestId once the record is pruned: the key alone names the charge.
        metadata: {
          requestId: String(charge.idempotentRequestId ?? ""),
          apiClientId: String(charge.apiClientId),
          idempotencyKey: null,
        },
        // The app row is written right after the gateway answered: a lookup that lags (Stripe's search) may not
        // show a charge that recent yet, and must say so (unproven) rather than "not charged".
        lastAttemptAt: charge.createdAt,
      });
      if (lookup.kind === "charged") {
        unlisted.olderThanWindow += 1;
        inOrderNow();
        continue;
      }
      // A lookup that lags (Stripe's search) cannot prove the charge missing yet: a later run asks again.
      if (lookup.kind === "unproven") continue;
      findings.push({
        kind: "app_charge_without_gateway_charge",
        subject: charge.id,
        chargeId: charge.id,
        requestId: charge.idempotentRequestId ?? undefined,
        evidence: {
          why: "the gateway has no charge under its key",
          app: {
            id: charge.id,
            key: charge.gatewayIdempotencyKey,
            gateway_charge_id: charge.gatewayChargeId,
            amount_cents: charge.amountCents,
            currency: charge.currency,
            created_at: charge.createdAt.toISOString(),
          },
        },
      });
    }
    if (page.length < PAGE) return { count, findings, unlisted };
    cursor = page.at(-1)!.id;
  }
}

/** A finding's row as its first run stores it. */
const newMismatch = (runId: number, f: Finding, now: Date) => ({
  fingerprint: fingerprint(f),
  kind: f.kind,
  gatewayChargeId: f.gatewayChargeId,
  chargeId: f.chargeId,
  requestId: f.requestId,
  evidence: JSON.stringify(f.evidence, (_, v) => (typeof v === "bigint" ? String(v) : v)),
  firstRunId: runId,
  detectedAt: now,
  lastSeenAt: now,
});

/** Stores the findings (one row per fingerprint) and resolves earlier ones whose subject is now in order. */
async function storeFindings(runId: number, findings: Finding[], inOrder: Set<string>) {
  const now = new Date();
  for (const f of findings) {
    const upsert = () =>
      db.ledgerMismatch.upsert({
        where: { fingerprint: fingerprint(f) },
        create: newMismatch(runId, f, now),
        update: { lastSeenAt: now },
      });
    // Two runs at once may both find it new: the second's INSERT meets the first's row, and updates it instead.
    await upsert().catch((error: unknown) => {
      if (!isDuplicateKeyError(error)) throw error;
      return upsert();
    });
    // Found again: open again, unless an engineer closed it. Their closing is written once (a trigger keeps it);
    // its last_seen_at after resolved_at then shows it was seen again.
    await db.ledgerMismatch.updateMany({
      where: { fingerprint: fingerprint(f), resolvedBy: null, resolvedAt: { not: null } },
      data: { resolvedAt: null },
    });
  }
  const resolved = [...inOrder].filter((p) => !findings.some((f) => fingerprint(f) === p));
  for (let i = 0; i < resolved.length; i += 500) {
    await db.ledgerMismatch.updateMany({
      where: { fingerprint: { in: resolved.slice(i, i + 500) }, resolvedAt: null },
      data: { resolvedAt: now },
    });
  }
}

/** A healed late charge stays on the ledger as a mismatch the app itself closed, naming its refund. */
async function storeHealed(runId: number, healed: Healed[]) {
  const now = new Date();
  for (const { healed: refund, finding: f } of healed) {
    const closed = {
      resolvedAt: now,
      healedRefundId: refund.id,
      resolutionNote: `Healed automatically: refunded in full (${refund.id}).`,
    };
    await db.ledgerMismatch.upsert({
      where: { fingerprint: fingerprint(f) },
      create: { ...newMismatch(runId, { ...f, chargeId: refund.chargeId }, now), ...closed },
      update: { lastSeenAt: now, ...closed },
    });
  }
}

/**
 * Reconciles [since, until): every gateway charge created in the window, and
 * every app charge created in it. Records the run and its findings.
 */
export async function reconcileLedger({
  since,
  until = new Date(),
  heal = env.HEAL_LATE_CHARGES,
}: {
  since: Date;
  until?: Date;
  /** Refund late charges of written-off operations (HEAL_LATE_CHARGES); false leaves them for a person. */
  heal?: boolean;
}): Promise<ReconciliationResult> {
  await checkGatewayIdentity();
  const run = await db.reconciliationRun.create({
    data: { instance: `${hostname()}:${process.pid}`, windowStart: since, windowEnd: until, startedAt: new Date() },
  });
  try {
    const findings: Finding[] = [];
    const listed: ListedGatewayCharge[] = [];
    const inOrder = new Set<string>();
    let repaired = 0;
    const healed: Healed[] = [];
    let cursor: string | undefined;
    do {
      const page = await gateway.listCharges({ since, until, cursor, limit: PAGE });
      listed.push(...page.charges);
      const appCharges = await db.charge.findMany({
        where: { gatewayIdempotencyKey: { in: page.charges.map((c) => c.idempotencyKey) } },
      });
      const byKey = new Map(appCharges.map((c) => [c.gatewayIdempotencyKey, c]));
      for (const charge of page.charges) {
        const appCharge = byKey.get(charge.idempotencyKey);
        const settled = appCharge ? compare(charge, appCharge) : await settleOrphan(charge, heal);
        if (settled === "repaired") repaired += 1;
        else if (settled && typeof settled === "object" && "healed" in settled) healed.push(settled);
        else if (settled && settled !== "in_flight" && settled !== "in_order") findings.push(settled);
        else if (settled === null || settled === "in_order") {
          inOrder.add(fingerprint({ kind: "gateway_charge_without_app_charge", subject: charge.id }));
          inOrder.add(fingerprint({ kind: "amount_or_currency_mismatch", subject: charge.id }));
        }
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);

    findings.push(...(await doubleCharges(listed)));
    const app = await appChargesWithoutGatewayCharge(
      { since, until },
      new Set(listed.map((c) => c.idempotencyKey)),
      inOrder,
    );
    findings.push(...app.findings);
    const refunds = await reconcileRefunds({ since, until });
    findings.push(...refunds.findings);
    for (const subject of refunds.inOrder) inOrder.add(fingerprint(subject));
    repaired += refunds.repaired;
    await storeFindings(run.id, findings, inOrder);
    await storeHealed(run.id, healed);
    await db.reconciliationRun.update({
      where: { id: run.id },
      data: {
        finishedAt: new Date(),
        gatewayCharges: listed.length,
        appCharges: app.count,
        gatewayRefunds: refunds.gatewayRefunds,
        appRefunds: refunds.appRefunds,
        repaired,
        healed: healed.length,
        mismatches: findings.length,
      },
    });
    return {
      runId: run.id,
      window: { since, until },
      gatewayCharges: listed.length,
      appCharges: app.count,
      gatewayRefunds: refunds.gatewayRefunds,
      appRefunds: refunds.appRefunds,
      unlisted: app.unlisted,
      repaired,
      healed: healed.length,
      findings,
    };
  } catch (error) {
    await db.reconciliationRun
      .update({ where: { id: run.id }, data: { finishedAt: new Date(), error: String(error) } })
      .catch(() => {});
    throw error;
  }
}
