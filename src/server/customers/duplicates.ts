/**
 * Possible duplicate charges across all customers: a succeeded charge with an
 * earlier succeeded one of the same client, customer, amount and currency less
 * than MAX_WINDOW_MINUTES before it. That is the signature of the incident this
 * project exists to stop (a retry under a new key, or without one).
 *
 * Pairs go by when the charges' requests arrived (requested_at), not by when they
 * were settled: a charge the sweeper finishes is written minutes after its
 * customer paid.
 *
 * Found by the sweeper, not on every page view: the self-join over all charges
 * of a busy day is seconds of work, while the scan of the charges settled since
 * the last sweep is an index range plus two probes each along (customer_id,
 * requested_at): forced, since the optimiser otherwise likes the client's index,
 * which holds a big client's whole month. The list is then a read
 * of a small table, newest first. A charge committed after the scan passed its
 * time (a completion in flight) is caught by the next scan, which starts
 * OVERLAP_MS before the last one ended.
 */
import { z } from "zod";
import { Prisma } from "~/generated/prisma/client";
import { db } from "~/server/db";
import { before, cond, cursorOf, cursorSchema, where } from "~/server/requests/sql";
import { MAX_WINDOW_MINUTES, windowMinutes } from "./charges";
import { type DuplicateEvidence, evidenceDisplay, LIKELY_DOUBLE_CHARGES } from "./evidence";
import { pairEvidence, parsePairRequests } from "./pairEvidence";

const WATERMARK = "duplicates_scanned_until";
const OVERLAP_MS = 2 * 60_000;
/** Charges younger than this may still be committing; they wait for the next scan. */
const SETTLE_MS = 5_000;
/** One statement scans at most this much time; a long gap (first run, sweeper down) is worked through in steps. */
const STEP_MS = 3_600_000;
/** A first scan looks back this far. */
const FIRST_SCAN_MS = 24 * 3_600_000;

/** A charge as the scan reads it. */
type ScannedCharge = {
  id: string;
  apiClientId: number;
  customerId: string;
  amountCents: number;
  currency: string;
  idempotentRequestId: bigint | null;
  requestedAt: Date;
  createdAt: Date;
};

const SCANNED_COLUMNS = `c.id, c.api_client_id AS apiClientId, c.customer_id AS customerId,
  c.amount_cents AS amountCents, c.currency, c.idempotent_request_id AS idempotentRequestId,
  c.requested_at AS requestedAt, c.created_at AS createdAt`;

/**
 * The nearest other succeeded charge of the same client, customer, amount and currency whose request arrived
 * before (or after) this one's, within the widest window: one probe along (customer_id, requested_at).
 */
const nearest = (direction: "before" | "after") => {
  const [cmp, within, order] =
    direction === "before" ? ["<", ">= c.requested_at -", "DESC"] : [">", "<= c.requested_at +", "ASC"];
  return `(SELECT e.id FROM charges e FORCE INDEX (charges_customer_requested_idx)
            WHERE e.customer_id = c.customer_id
              AND e.requested_at ${within} INTERVAL ${MAX_WINDOW_MINUTES} MINUTE
              AND (e.requested_at ${cmp} c.requested_at OR (e.requested_at = c.requested_at AND e.id ${cmp} c.id))
              AND e.api_client_id = c.api_client_id AND e.amount_cents = c.amount_cents
              AND e.currency = c.currency AND e.status = 'succeeded'
            ORDER BY e.requested_at ${order}, e.id ${order} LIMIT 1)`;
};

/**
 * Records the possible duplicates among charges settled in [since, until); how many new ones. Pairs go by
 * arrival: a charge is paired with the one whose request came just before its own, and with the one just after
 * (a charge the sweeper settles late may have been asked for before a charge already scanned). A plain read
 * first (a consistent read takes no locks, so the charges being written meanwhile never wait on it), then one
 * INSERT of what it found; a charge already paired with an earlier one keeps that pair.
 */
export async function recordPossibleDuplicates(since: Date, until: Date): Promise<number> {
  const found = await db.$queryRawUnsafe<(ScannedCharge & { earlierId: string | null; laterId: string | null })[]>(
    `SELECT ${SCANNED_COLUMNS}, ${nearest("before")} AS earlierId, ${nearest("after")} AS laterId
       FROM charges c FORCE INDEX (charges_created_idx)
      WHERE c.created_at >= ? AND c.created_at < ? AND c.customer_id IS NOT NULL AND c.status = 'succeeded'`,
    since,
    until,
  );
  const twinIds = [...new Set(found.flatMap((c) => [c.earlierId, c.laterId]).filter((id) => id !== null))];
  const twins = twinIds.length
    ? await db.$queryRawUnsafe<ScannedCharge[]>(
        `SELECT ${SCANNED_COLUMNS} FROM charges c WHERE c.id IN (${twinIds.map(() => "?").join(", ")})`,
        ...twinIds,
      )
    : [];
  const byId = new Map([...found, ...twins].map((c) => [c.id, c]));
  const pairs = new Map<string, { later: ScannedCharge; earlier: ScannedCharge }>();
  for (const c of found) {
    if (c.earlierId && byId.has(c.earlierId)) pairs.set(c.id, { later: c, earlier: byId.get(c.earlierId)! });
    const later = c.laterId ? byId.get(c.laterId) : undefined;
    if (later && !pairs.has(later.id)) pairs.set(later.id, { later, earlier: c });
  }
  if (pairs.size === 0) return 0;
  const list = [...pairs.values()].map((p) => ({
    ...p,
    gapMs: p.later.requestedAt.getTime() - p.earlier.requestedAt.getTime(),
  }));
  const foundAt = new Date();
  const evidence = await pairEvidence(list);
  const rows = list.map(({ later, earlier, gapMs }, i) => {
    const e = evidence[i]!;
    return Prisma.sql`(${later.id}, ${earlier.id}, ${later.apiClientId}, ${later.customerId}, ${later.amountCents},
                       ${later.currency}, ${gapMs}, ${later.createdAt}, ${later.requestedAt}, ${foundAt},
                       ${e.evidence}, ${JSON.stringify(e.requests)})`;
  });
  return db.$executeRaw`
    INSERT IGNORE INTO possible_duplicate_charges
      (charge_id, earlier_charge_id, api_client_id, customer_id, amount_cents, currency, gap_ms, charge_created_at,
       requested_at, found_at, evidence, requests)
    VALUES ${Prisma.join(rows)}`;
}

/**
 * Pairs found before the evidence was kept get it from their charges' records while those live (no_evidence once
 * they have expired): a few hundred per sweep, until none is left.
 */
export async function classifyOlderPairs(limit = 500): Promise<number> {
  const pairs = await db.$queryRaw<
    {
      id: string;
      gapMs: number;
      laterRequestId: bigint | null;
      laterRequestedAt: Date;
      laterCreatedAt: Date;
      earlierRequestId: bigint | null;
      earlierRequestedAt: Date;
      earlierCreatedAt: Date;
    }[]
  >`
    SELECT p.charge_id AS id, p.gap_ms AS gapMs,
           c.idempotent_request_id AS laterRequestId, c.requested_at AS laterRequestedAt,
           c.created_at AS laterCreatedAt, e.idempotent_request_id AS earlierRequestId,
           e.requested_at AS earlierRequestedAt, e.created_at AS earlierCreatedAt
      FROM possible_duplicate_charges p FORCE INDEX (possible_duplicate_charges_evidence_idx)
      JOIN charges c ON c.id = p.charge_id JOIN charges e ON e.id = p.earlier_charge_id
     WHERE p.evidence IS NULL LIMIT ${limit}`;
  const evidence = await pairEvidence(
    pairs.map((p) => ({
      gapMs: Number(p.gapMs),
      later: { idempotentRequestId: p.laterRequestId, requestedAt: p.laterRequestedAt, createdAt: p.laterCreatedAt },
      earlier: {
        idempotentRequestId: p.earlierRequestId,
        requestedAt: p.earlierRequestedAt,
        createdAt: p.earlierCreatedAt,
      },
    })),
  );
  for (const [i, p] of pairs.entries()) {
    const e = evidence[i]!;
    await db.$executeRaw`UPDATE possible_duplicate_charges SET evidence = ${e.evidence},
                           requests = ${JSON.stringify(e.requests)} WHERE charge_id = ${p.id}`;
  }
  return pairs.length;
}

/** The sweeper's step: scans the charges made since the last scan (within `budgetMs`); how many it found. */
export async function scanForDuplicates({ budgetMs = 10_000, now = new Date() } = {}): Promise<number> {
  const started = Date.now();
  const row = await db.setting.findUnique({ where: { name: WATERMARK } });
  const last = row ? new Date(row.value) : new Date(now.getTime() - FIRST_SCAN_MS);
  const end = new Date(now.getTime() - SETTLE_MS);
  let from = new Date(Math.min(last.getTime() - OVERLAP_MS, end.getTime()));
  let found = 0;
  while (from < end && Date.now() - started < budgetMs) {
    const to = new Date(Math.min(from.getTime() + STEP_MS, end.getTime()));
    found += await recordPossibleDuplicates(from, to);
    const value = to.toISOString();
    await db.setting.upsert({ where: { name: WATERMARK }, create: { name: WATERMARK, value }, update: { value } });
    from = to;
  }
  await classifyOlderPairs();
  return found;
}

export const DUPLICATE_EVIDENCE_FILTERS = ["all", "likely", "two_purchases"] as const;

export const duplicatesInput = z.object({
  windowMinutes,
  /** "likely": the likely double charges only; "two_purchases": the rest (repeat purchases too). */
  evidence: z.enum(DUPLICATE_EVIDENCE_FILTERS).default("all"),
  since: z.date().optional(),
  until: z.date().optional(),
  cursor: cursorSchema.nullish(),
  limit: z.number().int().min(1).max(100).default(25),
});

/** A stored pair as the dashboard shows it: the evidence worded, the two requests side by side. */
export type PairRow = {
  id: string;
  earlierId: string;
  apiClientId: number;
  customerId: string;
  amountCents: number;
  currency: string;
  gapMs: number;
  /** When the later charge's request arrived... */
  requestedAt: Date;
  /** ...and when it was settled. */
  settledAt: Date;
  evidence: DuplicateEvidence | null;
  requests: string | null;
};

export const PAIR_COLUMNS = `charge_id AS id, earlier_charge_id AS earlierId, api_client_id AS apiClientId,
  customer_id AS customerId, amount_cents AS amountCents, currency, gap_ms AS gapMs,
  requested_at AS requestedAt, charge_created_at AS settledAt, evidence, requests`;

export async function presentPairs(rows: PairRow[]) {
  const clientIds = [...new Set(rows.map((r) => r.apiClientId))];
  const clients = clientIds.length
    ? await db.apiClient.findMany({ where: { id: { in: clientIds } }, select: { id: true, name: true } })
    : [];
  const clientOf = new Map(clients.map((c) => [c.id, c]));
  return rows.map(({ requests, ...r }) => ({
    ...r,
    gapMs: Number(r.gapMs),
    evidence: evidenceDisplay(r.evidence),
    requests: parsePairRequests(requests),
    apiClient: clientOf.get(r.apiClientId) ?? { id: r.apiClientId, name: `client ${r.apiClientId}` },
  }));
}

const evidenceCondition = (filter: (typeof DUPLICATE_EVIDENCE_FILTERS)[number]) =>
  filter === "likely"
    ? [cond(`evidence IN (${LIKELY_DOUBLE_CHARGES.map(() => "?").join(", ")})`, ...LIKELY_DOUBLE_CHARGES)]
    : filter === "two_purchases"
      ? [cond("evidence IN ('two_purchases', 'repeat_purchase')")]
      : [];

/** Newest first: each later charge with the earlier one it may repeat, closer together than the window. */
export async function listPossibleDuplicates(input: z.infer<typeof duplicatesInput>) {
  const w = where([
    cond("gap_ms <= ?", input.windowMinutes * 60_000),
    ...evidenceCondition(input.evidence),
    ...(input.since ? [cond("requested_at >= ?", input.since)] : []),
    ...(input.until ? [cond("requested_at <= ?", input.until)] : []),
    ...before(input.cursor, String, "requested_at", "charge_id"),
  ]);
  const index =
    input.evidence === "all" ? "possible_duplicate_charges_requested_idx" : "possible_duplicate_charges_evidence_idx";
  const rows = await db.$queryRawUnsafe<PairRow[]>(
    `SELECT ${PAIR_COLUMNS} FROM possible_duplicate_charges USE INDEX (${index})
      ${w.sql} ORDER BY requested_at DESC, charge_id DESC LIMIT ?`,
    ...w.values,
    input.limit + 1,
  );
  const shown = rows.slice(0, input.limit);
  return {
    items: await presentPairs(shown),
    nextCursor:
      rows.length > input.limit ? cursorOf({ createdAt: shown.at(-1)!.requestedAt, id: shown.at(-1)!.id }) : null,
    scannedUntil: await duplicatesScannedUntil(),
  };
}

/** When the sweeper last finished scanning charges for duplicates (null: never). */
export async function duplicatesScannedUntil(): Promise<Date | null> {
  const lastScan = await db.setting.findUnique({ where: { name: WATERMARK } });
  return lastScan ? new Date(lastScan.value) : null;
}
