/**
 * The dashboard's lists of records: the request log's pages and counts (filtered by phase, stored status, route,
 * client, customer and time) and the search by key prefix. Which index serves which filter is decided here; which
 * columns make a phase is the lifecycle's (phaseCondition), decoded by it too (decodeRecord).
 */
import { db, driverErrorCode, type Statement } from "~/server/db";
import { ABANDONED_TRACE_PATH } from "~/server/http/abandonedAnswer";
import {
  decodeRecord,
  phaseCondition,
  RECORD_COLUMNS,
  type IdempotencyRecord,
  type PhaseFilter,
  type RecordRow,
} from "~/server/idempotency/reading";

/**
 * The index that finds the records of a phase when they are few (the phases a record only passes through), or
 * none when they are most of the table (walk by time).
 */
const PHASE_INDEX: Record<PhaseFilter, string | null> = {
  in_progress: "idempotent_requests_sweep_idx",
  held: "idempotent_requests_sweep_idx",
  lease_expired: "idempotent_requests_sweep_idx",
  released: "idempotent_requests_sweep_idx",
  complete: null,
  request: null,
  reconciled: "idempotent_requests_finished_idx",
  abandoned: "idempotent_requests_finished_idx",
};

/** The dashboard's filters over records (src/server/requests/log.ts). Stored statuses are 201, 402 and 500. */
export type RecordFilter = {
  phase?: PhaseFilter;
  status?: "201" | "402" | "500" | "none";
  route?: string;
  apiClientId?: number;
  customerId?: string;
  /** Abandoned records whose stored answer names this trace (http/abandonedAnswer.ts). */
  abandoned?: "no_trace" | "refused";
  since?: Date;
  until?: Date;
};

/**
 * The filters' conditions and the indexes that can find their rows. Each index
 * starts with its filter's column and ends with created_at (InnoDB appends the
 * id), so a page is read in order and stops after `limit` rows. USE INDEX lists
 * the candidates so the optimiser picks the most selective filter by its
 * estimates, instead of walking the whole table by time; with no selective
 * filter, the walk by time is the plan (the route is never selective).
 */
function recordFilterSql(f: RecordFilter, now: Date): { where: string; values: unknown[]; indexes: string } {
  const parts: { sql: string; values: unknown[] }[] = [];
  const indexes: string[] = [];
  if (f.phase) {
    parts.push(phaseCondition(f.phase, now));
    const index = PHASE_INDEX[f.phase];
    if (index) indexes.push(index);
  }
  if (f.abandoned) {
    // Among the abandoned records (few: found by their own index), those whose answer names this trace.
    if (f.phase !== "abandoned") {
      parts.push(phaseCondition("abandoned", now));
      indexes.push(PHASE_INDEX.abandoned!);
    }
    parts.push({ sql: `JSON_VALUE(response_body, '${ABANDONED_TRACE_PATH}') = ?`, values: [f.abandoned] });
  }
  if (f.status) {
    parts.push(
      f.status === "none"
        ? { sql: "response_status IS NULL", values: [] }
        : { sql: "response_status = ?", values: [Number(f.status)] },
    );
    indexes.push("idempotent_requests_status_idx");
  }
  if (f.route) parts.push({ sql: "route = ?", values: [f.route] });
  if (f.apiClientId) {
    parts.push({ sql: "api_client_id = ?", values: [f.apiClientId] });
    indexes.push("idempotent_requests_client_created_idx");
  }
  if (f.customerId) {
    parts.push({ sql: "customer_id = ?", values: [f.customerId] });
    indexes.push("idempotent_requests_customer_idx");
  }
  if (f.since) parts.push({ sql: "created_at >= ?", values: [f.since] });
  if (f.until) parts.push({ sql: "created_at <= ?", values: [f.until] });
  if (indexes.length === 0) indexes.push("idempotent_requests_created_idx");
  return {
    where: parts.length ? `WHERE ${parts.map((p) => `(${p.sql})`).join(" AND ")}` : "",
    values: parts.flatMap((p) => p.values),
    indexes: indexes.join(", "),
  };
}

/**
 * A page of records, newest first by (created_at, id), after `before` (the last row of the previous page).
 * The page's ids are found first from the index alone, then its rows by primary key (a deferred join). Asked for
 * whole rows at once, MariaDB reads a filter's index by its equality only (ref: the client's newest row first) when
 * the filter matches a large share of the table (the biggest client), and walks every row newer than the cursor,
 * each with its row lookup: 4 000 rows down the log that was 1 200 rows for 26 (p95 170 ms at 5M records), four
 * days down 200 000 (1.9 s). The id-only read is a range starting at the cursor: 26 index entries at any depth.
 * test/dashboardQueries.test.ts pins it with ANALYZE.
 */
export function recordListStatement(
  f: RecordFilter,
  page: { before?: { createdAt: Date; id: bigint } | null; limit: number },
  now: Date,
): Statement {
  const { where, values, indexes } = recordFilterSql(f, now);
  const b = page.before;
  const after = b
    ? {
        sql: `${where ? " AND" : "WHERE"} (created_at < ? OR (created_at = ? AND id < ?))`,
        values: [b.createdAt, b.createdAt, b.id],
      }
    : { sql: "", values: [] };
  return {
    sql: `SELECT ${RECORD_COLUMNS}, customer_id AS customerId
            FROM (SELECT id AS page_id FROM idempotent_requests USE INDEX (${indexes})
                   ${where}${after.sql} ORDER BY created_at DESC, id DESC LIMIT ?) AS page
            JOIN idempotent_requests ON idempotent_requests.id = page.page_id
           ORDER BY created_at DESC, id DESC`,
    values: [...values, ...after.values, page.limit],
  };
}

/** How many records match, counting at most `cap` + 1 of them (never a COUNT(*) over the whole table). */
export function recordCountStatement(f: RecordFilter, cap: number, now: Date): Statement {
  const { where, values, indexes } = recordFilterSql(f, now);
  return {
    sql: `SELECT COUNT(*) AS n
            FROM (SELECT 1 FROM idempotent_requests USE INDEX (${indexes}) ${where} LIMIT ?) AS page`,
    values: [...values, cap + 1],
  };
}

/** Records whose key starts with `prefix`, in key order along the unique index (stops after `limit`). */
export function keyPrefixStatement(prefix: string, limit: number): Statement {
  const low = Buffer.from(prefix, "latin1");
  const high = Buffer.from(low);
  high[high.length - 1] = high[high.length - 1]! + 1; // printable ASCII: never past 0x7f
  return {
    sql: `SELECT ${RECORD_COLUMNS}, customer_id AS customerId FROM idempotent_requests
           WHERE idempotency_key >= ? AND idempotency_key < ? ORDER BY idempotency_key, route LIMIT ?`,
    values: [low, high, limit],
  };
}

/** A record as the dashboard lists it: decoded, with the customer its request named. */
export type ListedRecord = IdempotencyRecord & { customerId: string | null };

type ListedRow = RecordRow & { customerId: string | null };
const listed = (rows: ListedRow[], now: Date): ListedRecord[] =>
  rows.map((row) => ({ ...decodeRecord({ ...row, attempt: Number(row.attempt) }, now), customerId: row.customerId }));

/** The dashboard's request log: a page of records, newest first (see recordListStatement). */
export async function listRecords(
  filter: RecordFilter,
  page: { before?: { createdAt: Date; id: bigint } | null; limit: number },
  now = new Date(),
): Promise<ListedRecord[]> {
  const { sql, values } = recordListStatement(filter, page, now);
  return listed(await db.$queryRawUnsafe<ListedRow[]>(sql, ...values), now);
}

/**
 * How many records match the filter, up to `cap` + 1; null when counting would
 * take longer than `budgetMs`. Filters that no one index serves together (a
 * client and a status, say) are checked row by row, and a sparse combination
 * could read a big client's every row on each refresh: the budget stops that.
 * 100 ms, so that a count that gives up still answers within the dashboard's
 * 150 ms target (bench/README.md, dashboard).
 */
export async function countRecords(
  filter: RecordFilter,
  cap: number,
  budgetMs = 100,
  now = new Date(),
): Promise<number | null> {
  const { sql, values } = recordCountStatement(filter, cap, now);
  try {
    const [row] = await db.$queryRawUnsafe<{ n: bigint }[]>(
      `SET STATEMENT max_statement_time = ${budgetMs / 1000} FOR ${sql}`,
      ...values,
    );
    return Number(row?.n ?? 0);
  } catch (error) {
    if (driverErrorCode(error) === QUERY_INTERRUPTED) return null;
    throw error;
  }
}

/** MariaDB's "query execution was interrupted (max_statement_time exceeded)". */
const QUERY_INTERRUPTED = 1969;

/** Records whose key starts with `prefix`, in key order. */
export async function recordsWithKeyPrefix(prefix: string, limit: number, now = new Date()): Promise<ListedRecord[]> {
  const { sql, values } = keyPrefixStatement(prefix, limit);
  return listed(await db.$queryRawUnsafe<ListedRow[]>(sql, ...values), now);
}
