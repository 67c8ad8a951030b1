/**
 * "Was customer X charged twice?": every charge of a customer, keyed and
 * keyless, newest first by when its request arrived, along (customer_id,
 * requested_at), each with its record (while it lives) and a flag for a
 * possible duplicate: the succeeded charge of the same client, customer, amount
 * and currency whose request arrived nearest before it (else after it) within
 * the window, the pair classified by evidence.ts.
 */
import { z } from "zod";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { decodeRecord } from "~/server/idempotency/reading";
import { phaseDisplay } from "~/server/requests/phaseDisplay";
import { before, bounded, cond, COUNT_CAP, cursorOf, cursorSchema, where } from "~/server/requests/sql";
import { openMismatchesOf } from "~/server/ledger/mismatches";
import { classifyPair, evidenceDisplay } from "./evidence";
import { chargeSnapshots, type RequestSnapshot } from "./pairEvidence";

export const DEFAULT_WINDOW_MINUTES = 10;
/** The widest window the dashboard offers; the sweeper records candidate pairs up to it (duplicates.ts). */
export const MAX_WINDOW_MINUTES = 60;
export const windowMinutes = z.number().int().min(1).max(MAX_WINDOW_MINUTES).default(DEFAULT_WINDOW_MINUTES);

export const customerChargesInput = z.object({
  customerId: z.string().trim().min(1).max(64),
  windowMinutes,
  since: z.date().optional(),
  until: z.date().optional(),
  cursor: cursorSchema.nullish(),
  limit: z.number().int().min(1).max(100).default(50),
});

type ChargeRow = {
  id: string;
  apiClientId: number;
  customerId: string | null;
  amountCents: number;
  currency: string;
  status: "succeeded" | "failed";
  failureCode: string | null;
  idempotentRequestId: bigint | null;
  /** When it was settled... */
  createdAt: Date;
  /** ...and when its first request arrived. */
  requestedAt: Date;
  /** What refunds gave back of it. */
  amountRefundedCents: number;
};

const CHARGE_COLUMNS = `c.id, c.api_client_id AS apiClientId, c.customer_id AS customerId,
  c.amount_cents AS amountCents, c.currency, c.status, c.failure_code AS failureCode,
  c.idempotent_request_id AS idempotentRequestId, c.created_at AS createdAt, c.requested_at AS requestedAt,
  c.amount_refunded_cents AS amountRefundedCents`;

type Twin = Pick<ChargeRow, "id" | "idempotentRequestId" | "requestedAt" | "createdAt">;

/**
 * For each charge, the other succeeded charge with the same client, customer, amount and currency whose request
 * arrived nearest before it within `minutes` (else nearest after it): two indexed probes per charge of the page,
 * pairing charges as the sweeper's scan does (duplicates.ts).
 */
async function twinsOf(charges: ChargeRow[], minutes: number): Promise<Map<string, Twin>> {
  const candidates = charges.filter((c) => c.status === "succeeded" && c.customerId !== null);
  if (candidates.length === 0) return new Map();
  // Each probe a range along the covering (customer_id, requested_at, ...) index, its bounds given as values:
  // correlated bounds would let MariaDB read the customer's every charge for each probe.
  const probe = (order: "ASC" | "DESC") => `(SELECT ? AS id, ? AS side, e.id AS twinId
                   FROM charges e FORCE INDEX (charges_customer_requested_idx)
                   WHERE e.customer_id = ? AND e.requested_at BETWEEN ? AND ? AND e.id <> ? AND e.api_client_id = ?
                     AND e.amount_cents = ? AND e.currency = ? AND e.status = 'succeeded'
                   ORDER BY e.requested_at ${order} LIMIT 1)`;
  const window = minutes * 60_000;
  const values = (c: ChargeRow, side: "before" | "after", from: Date, to: Date) => [
    c.id,
    side,
    c.customerId,
    from,
    to,
    c.id,
    c.apiClientId,
    c.amountCents,
    c.currency,
  ];
  const at = (c: ChargeRow, ms: number) => new Date(c.requestedAt.getTime() + ms);
  const rows = await db.$queryRawUnsafe<{ id: string; side: string; twinId: string | null }[]>(
    candidates.flatMap(() => [probe("DESC"), probe("ASC")]).join(" UNION ALL "),
    ...candidates.flatMap((c) => [
      ...values(c, "before", at(c, -window), c.requestedAt),
      ...values(c, "after", c.requestedAt, at(c, window)),
    ]),
  );
  const twinIds = [...new Set(rows.flatMap((r) => (r.twinId ? [r.twinId] : [])))];
  const twins = twinIds.length
    ? await db.charge.findMany({
        where: { id: { in: twinIds } },
        select: { id: true, createdAt: true, requestedAt: true, idempotentRequestId: true },
      })
    : [];
  const twinOf = new Map(twins.map((t) => [t.id, t]));
  const nearest = new Map<string, Twin>();
  for (const side of ["after", "before"]) {
    for (const r of rows)
      if (r.side === side && r.twinId && twinOf.has(r.twinId)) nearest.set(r.id, twinOf.get(r.twinId)!);
  }
  return nearest;
}

/**
 * Charges with their client, record (key and phase, while the record lives) and possible twin, the pair
 * classified by what the two requests show (evidence.ts): only a likely double charge is highlighted.
 */
async function present(charges: ChargeRow[], minutes: number) {
  const requestIds = charges.flatMap((c) => (c.idempotentRequestId === null ? [] : [c.idempotentRequestId]));
  const clientIds = [...new Set(charges.map((c) => c.apiClientId))];
  const [records, clients, twins] = await Promise.all([
    requestIds.length ? db.idempotentRequest.findMany({ where: { id: { in: requestIds } } }) : [],
    clientIds.length
      ? db.apiClient.findMany({ where: { id: { in: clientIds } }, select: { id: true, name: true } })
      : [],
    twinsOf(charges, minutes),
  ]);
  const paired = charges.filter((c) => twins.has(c.id));
  const snapshotOf = await chargeSnapshots([...paired, ...paired.map((c) => twins.get(c.id)!)]);
  const now = new Date();
  const recordOf = new Map(records.map((r) => [String(r.id), decodeRecord(r, now)]));
  const clientOf = new Map(clients.map((c) => [c.id, c]));
  return charges.map((c) => {
    const record = c.idempotentRequestId === null ? undefined : recordOf.get(String(c.idempotentRequestId));
    return {
      id: c.id,
      apiClient: clientOf.get(c.apiClientId) ?? { id: c.apiClientId, name: `client ${c.apiClientId}` },
      customerId: c.customerId,
      amountCents: c.amountCents,
      currency: c.currency,
      status: c.status,
      failureCode: c.failureCode,
      amountRefundedCents: Number(c.amountRefundedCents),
      requestedAt: c.requestedAt,
      settledAt: c.createdAt,
      request: record
        ? { id: String(record.id), idempotencyKey: record.idempotencyKey, phase: phaseDisplay(record.phase) }
        : null,
      possibleDuplicateOf: twinOf(c, twins.get(c.id), snapshotOf),
    };
  });
}

function twinOf(charge: ChargeRow, twin: Twin | undefined, snapshotOf: (c: Twin) => RequestSnapshot | null) {
  if (!twin) return null;
  // Positive: the twin's request came first.
  const gapMs = charge.requestedAt.getTime() - twin.requestedAt.getTime();
  const [later, earlier] = gapMs >= 0 ? [charge, twin] : [twin, charge];
  const evidence = classifyPair(snapshotOf(later), snapshotOf(earlier), Math.abs(gapMs));
  return { id: twin.id, requestedAt: twin.requestedAt, gapMs, evidence: evidenceDisplay(evidence) };
}

export async function customerCharges(input: z.infer<typeof customerChargesInput>) {
  const range = [
    ...(input.since ? [cond("c.requested_at >= ?", input.since)] : []),
    ...(input.until ? [cond("c.requested_at <= ?", input.until)] : []),
  ];
  const w = where([
    cond("c.customer_id = ?", input.customerId),
    ...range,
    ...before(input.cursor, String, "c.requested_at", "c.id"),
  ]);
  const rows = await db.$queryRawUnsafe<ChargeRow[]>(
    `SELECT ${CHARGE_COLUMNS} FROM charges c USE INDEX (charges_customer_requested_idx)
      ${w.sql} ORDER BY c.requested_at DESC, c.id DESC LIMIT ?`,
    ...w.values,
    input.limit + 1,
  );
  const page = rows.slice(0, input.limit);
  const counting = where([cond("c.customer_id = ?", input.customerId), ...range]);
  const [counted] = await db.$queryRawUnsafe<{ n: bigint }[]>(
    `SELECT COUNT(*) AS n
       FROM (SELECT 1 FROM charges c USE INDEX (charges_customer_requested_idx) ${counting.sql} LIMIT ?) AS page`,
    ...counting.values,
    COUNT_CAP + 1,
  );
  return {
    charges: await present(page, input.windowMinutes),
    total: bounded(counted?.n ?? 0),
    nextCursor:
      rows.length > input.limit ? cursorOf({ createdAt: page.at(-1)!.requestedAt, id: page.at(-1)!.id }) : null,
  };
}

/** The customer page's pair of one charge, as its page shows it (null: none, or not a succeeded charge). */
export async function liveTwinOf(id: string, minutes: number) {
  const rows = await db.$queryRawUnsafe<ChargeRow[]>(`SELECT ${CHARGE_COLUMNS} FROM charges c WHERE c.id = ?`, id);
  if (rows.length === 0) return null;
  const [charge] = await present(rows, minutes);
  return charge!.possibleDuplicateOf && { ...charge!.possibleDuplicateOf, amountCents: charge!.amountCents };
}

/** One charge's page, keyless ones too; its record while it lives. */
export async function chargeDetail(id: string, minutes = DEFAULT_WINDOW_MINUTES) {
  const rows = await db.$queryRawUnsafe<ChargeRow[]>(`SELECT ${CHARGE_COLUMNS} FROM charges c WHERE c.id = ?`, id);
  if (rows.length === 0) throw new DomainError("not_found", `There is no charge ${id}.`);
  const full = await db.charge.findUniqueOrThrow({
    where: { id },
    select: { gatewayChargeId: true, gatewayIdempotencyKey: true, idempotentRequestId: true },
  });
  const [[charge], openMismatches] = await Promise.all([
    present(rows, minutes),
    openMismatchesOf({
      chargeIds: [id],
      gatewayChargeIds: [full.gatewayChargeId],
      requestIds: full.idempotentRequestId === null ? [] : [full.idempotentRequestId],
    }),
  ]);
  return {
    ...charge!,
    openMismatches,
    gatewayChargeId: full.gatewayChargeId,
    gatewayIdempotencyKey: full.gatewayIdempotencyKey,
    recordPruned: full.idempotentRequestId === null,
  };
}
