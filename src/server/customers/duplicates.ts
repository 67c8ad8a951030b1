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
    SELECT d.id, d.earlierId, d.apiClientId, d.customerId, d.amountCents, d.currency, d.createdAt,
           TIMESTAMPDIFF(MICROSECOND, e.created_at, d.createdAt) DIV 1000 AS gapMs
      FROM (SELECT c.id, c.api_client_id AS apiClientId, c.customer_id AS customerId, c.amount_cents AS amountCents,
                   c.currency, c.created_at AS createdAt,
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
  const rows = pairs.map(
    (p) => Prisma.sql`(${p.id}, ${p.earlierId}, ${p.apiClientId}, ${p.customerId}, ${p.amountCents}, ${p.currency},
                       ${Number(p.gapMs)}, ${p.createdAt}, ${foundAt})`,
  );
  return db.$executeRaw`
    INSERT IGNORE INTO possible_duplicate_charges
      (charge_id, earlier_charge_id, api_client_id, customer_id, amount_cents, currency, gap_ms, charge_created_at,
       found_at)
    VALUES ${Prisma.join(rows)}`;
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
  return found;
}

export const duplicatesInput = z.object({
  windowMinutes,
  cursor: cursorSchema.nullish(),
  limit: z.number().int().min(1).max(100).default(25),
});

/** Newest first: each later charge with the earlier one it may repeat, closer together than the window. */
export async function listPossibleDuplicates(input: z.infer<typeof duplicatesInput>) {
  const w = where([
    cond("gap_ms <= ?", input.windowMinutes * 60_000),
    ...before(input.cursor, String, "charge_created_at", "charge_id"),
  ]);
  const rows = await db.$queryRawUnsafe<
    {
      id: string;
      earlierId: string;
      apiClientId: number;
      customerId: string;
      amountCents: number;
      currency: string;
      gapMs: number;
      createdAt: Date;
    }[]
  >(
    `SELECT charge_id AS id, earlier_charge_id AS earlierId, api_client_id AS apiClientId, customer_id AS customerId,
            amount_cents AS amountCents, currency, gap_ms AS gapMs, charge_created_at AS createdAt
       FROM possible_duplicate_charges USE INDEX (possible_duplicate_charges_created_idx)
      ${w.sql} ORDER BY charge_created_at DESC, charge_id DESC LIMIT ?`,
    ...w.values,
    input.limit + 1,
  );
  const shown = rows.slice(0, input.limit);
  const clientIds = [...new Set(shown.map((r) => r.apiClientId))];
  const clients = clientIds.length
    ? await db.apiClient.findMany({ where: { id: { in: clientIds } }, select: { id: true, name: true } })
    : [];
  const clientOf = new Map(clients.map((c) => [c.id, c]));
  const lastScan = await db.setting.findUnique({ where: { name: WATERMARK } });
  return {
    items: shown.map((r) => ({ ...r, gapMs: Number(r.gapMs), apiClient: clientOf.get(r.apiClientId) ?? null })),
    nextCursor: rows.length > input.limit ? cursorOf(shown.at(-1)!) : null,
    scannedUntil: lastScan ? new Date(lastScan.value) : null,
  };
}
