/**
 * Possible duplicate charges across all customers: a succeeded charge with an
 * earlier succeeded one of the same client, customer, amount and currency less
 * than MAX_WINDOW_MINUTES before it. That is the signature of the incident this
 * project exists to stop (a retry under a new key, or without one).
 *
 * Found by the sweeper, not on every page view: the self-join over all charges
 * of a busy day is seconds of work, while the scan of the charges made since
 * the last sweep is an index range plus one probe each along (customer_id,
 * created_at): forced, since the optimiser otherwise likes the client's index,
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

type Pair = {
  id: string;
  earlierId: string;
  requestId: bigint | null;
  earlierRequestId: bigint | null;
  apiClientId: number;
  customerId: string;
  amountCents: number;
  currency: string;
  gapMs: bigint | number;
  createdAt: Date;
};

/**
 * Records the possible duplicates among charges created in [since, until); how
 * many new ones. A plain read first (a consistent read takes no locks, so the
 * charges being written meanwhile never wait on it), then one INSERT of what
 * it found.
 */
export async function recordPossibleDuplicates(since: Date, until: Date): Promise<number> {
  const pairs = await db.$queryRaw<Pair[]>`
    SELECT d.id, d.earlierId, d.apiClientId, d.customerId, d.amountCents, d.currency, d.createdAt, d.requestId,
           e.idempotent_request_id AS earlierRequestId,
           TIMESTAMPDIFF(MICROSECOND, e.created_at, d.createdAt) DIV 1000 AS gapMs
      FROM (SELECT c.id, c.api_client_id AS apiClientId, c.customer_id AS customerId, c.amount_cents AS amountCents,
                   c.currency, c.created_at AS createdAt, c.idempotent_request_id AS requestId,
                   (SELECT e.id FROM charges e FORCE INDEX (charges_customer_created_idx)
                     WHERE e.customer_id = c.customer_id
                       AND e.created_at >= c.created_at - INTERVAL ${MAX_WINDOW_MINUTES} MINUTE
                       AND (e.created_at < c.created_at OR (e.created_at = c.created_at AND e.id < c.id))
                       AND e.api_client_id = c.api_client_id AND e.amount_cents = c.amount_cents
                       AND e.currency = c.currency AND e.status = 'succeeded'
                     ORDER BY e.created_at DESC LIMIT 1) AS earlierId
              FROM charges c FORCE INDEX (charges_created_idx)
             WHERE c.created_at >= ${since} AND c.created_at < ${until}
               AND c.customer_id IS NOT NULL AND c.status = 'succeeded') AS d
      JOIN charges e ON e.id = d.earlierId`;
  if (pairs.length === 0) return 0;
  const foundAt = new Date();
  const evidence = await pairEvidence(pairs.map((p) => ({ ...p, gapMs: Number(p.gapMs) })));
  const rows = pairs.map((p, i) => {
    const e = evidence[i]!;
    return Prisma.sql`(${p.id}, ${p.earlierId}, ${p.apiClientId}, ${p.customerId}, ${p.amountCents}, ${p.currency},
                       ${Number(p.gapMs)}, ${p.createdAt}, ${foundAt}, ${e.evidence}, ${JSON.stringify(e.requests)})`;
  });
  return db.$executeRaw`
    INSERT IGNORE INTO possible_duplicate_charges
      (charge_id, earlier_charge_id, api_client_id, customer_id, amount_cents, currency, gap_ms, charge_created_at,
       found_at, evidence, requests)
    VALUES ${Prisma.join(rows)}`;
}

/**
 * Pairs found before the evidence was kept get it from their charges' records while those live (no_evidence once
 * they have expired): a few hundred per sweep, until none is left.
 */
export async function classifyOlderPairs(limit = 500): Promise<number> {
  const pairs = await db.$queryRaw<
    { id: string; requestId: bigint | null; earlierRequestId: bigint | null; gapMs: number }[]
  >`
    SELECT p.charge_id AS id, c.idempotent_request_id AS requestId, e.idempotent_request_id AS earlierRequestId,
           p.gap_ms AS gapMs
      FROM possible_duplicate_charges p FORCE INDEX (possible_duplicate_charges_evidence_idx)
      LEFT JOIN charges c ON c.id = p.charge_id LEFT JOIN charges e ON e.id = p.earlier_charge_id
     WHERE p.evidence IS NULL LIMIT ${limit}`;
  const evidence = await pairEvidence(pairs);
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
  /** "likely": the likely double charges only; "two_purchases": the rest. */
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
  createdAt: Date;
  evidence: DuplicateEvidence | null;
  requests: string | null;
};

export const PAIR_COLUMNS = `charge_id AS id, earlier_charge_id AS earlierId, api_client_id AS apiClientId,
  customer_id AS customerId, amount_cents AS amountCents, currency, gap_ms AS gapMs,
  charge_created_at AS createdAt, evidence, requests`;

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
      ? [cond("evidence = 'two_purchases'")]
      : [];

/** Newest first: each later charge with the earlier one it may repeat, closer together than the window. */
export async function listPossibleDuplicates(input: z.infer<typeof duplicatesInput>) {
  const w = where([
    cond("gap_ms <= ?", input.windowMinutes * 60_000),
    ...evidenceCondition(input.evidence),
    ...(input.since ? [cond("charge_created_at >= ?", input.since)] : []),
    ...(input.until ? [cond("charge_created_at <= ?", input.until)] : []),
    ...before(input.cursor, String, "charge_created_at", "charge_id"),
  ]);
  const index =
    input.evidence === "all" ? "possible_duplicate_charges_created_idx" : "possible_duplicate_charges_evidence_idx";
  const rows = await db.$queryRawUnsafe<PairRow[]>(
    `SELECT ${PAIR_COLUMNS} FROM possible_duplicate_charges USE INDEX (${index})
      ${w.sql} ORDER BY charge_created_at DESC, charge_id DESC LIMIT ?`,
    ...w.values,
    input.limit + 1,
  );
  const shown = rows.slice(0, input.limit);
  return {
    items: await presentPairs(shown),
    nextCursor: rows.length > input.limit ? cursorOf(shown.at(-1)!) : null,
    scannedUntil: await duplicatesScannedUntil(),
  };
}

/** When the sweeper last finished scanning charges for duplicates (null: never). */
export async function duplicatesScannedUntil(): Promise<Date | null> {
  const lastScan = await db.setting.findUnique({ where: { name: WATERMARK } });
  return lastScan ? new Date(lastScan.value) : null;
}
