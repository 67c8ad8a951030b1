/**
 * The lifecycle of an idempotency record: the one place that decodes a
 * record's phase from its columns, names the transitions between phases, holds
 * the conditional statement that performs each, and words each phase for
 * people. Every other module asks this one.
 *
 *                 claim (INSERT)
 *                      |
 *                      v
 *     +-----------> held ----- lease ends ----> lease_expired
 *     |            |    |                            |
 *     |   release  |    | complete                   | take (a retry, or the sweeper)
 *     |  (outcome  |    v                            |
 *     |  unknown)  |  complete: by the request,      |
 *     |            v  reconciled or abandoned        |
 *     +--take-- released                             |
 *     ^                                              |
 *     +----------------------------------------------+
 *
 * - `held`: a process owns the claim until `leaseExpiresAt` (a margin after the
 *   gateway timeout), under fencing token `attempt`.
 * - `lease_expired`: its holder died or stalled; the next retry (or the
 *   sweeper) takes it over with attempt + 1 and asks the gateway again under
 *   the same derived key, which answers with any charge it already made.
 * - `released`: the holder did not learn the gateway's outcome (the money may
 *   have moved) and gave the claim back; the next retry takes it again.
 * - `complete`: the stored answer, finished by the request itself, or by the
 *   sweeper: `reconciled` (the gateway had charged) or `abandoned` (it had not).
 *
 * Only `complete` records expire and are pruned. An in-progress record, however
 * old, is first finished by the sweeper (which asks the gateway): deleting it
 * would give its key a new record, hence a new gateway key, and a second charge.
 * The one exception is `withdraw`: a keyless claim whose own request learns,
 * from the read sent with its INSERT, that the header is required deletes it
 * at attempt 1, before any work. Nobody can have asked the gateway anything
 * under it (only a holder does, and a take-over would have moved the attempt),
 * and no key can ever name it again.
 *
 * Every transition is one conditional statement that names the attempt it was
 * decided on; 0 rows changed means someone else moved the record first.
 * Models: AWS Lambda Powertools' IdempotencyRecordStatus, brandur's
 * rocket-rides-atomic (recovery points, reaper, completer).
 */
import type { FinishedBy, IdempotentRequest } from "~/generated/prisma/client";
import type { Statement } from "~/server/db";
import { traceOfAbandoned } from "~/server/http/abandonedAnswer";
export type { FinishedBy };

/**
 * The exact answer stored for an operation: replayed verbatim. `requestId`: the Request-Id of the request that
 * produced it (absent when the sweeper did), named by every replay in Original-Request.
 */
export type StoredResponse = { status: number; body: string; requestId?: string | null };

export type Phase =
  | { name: "held"; leaseExpiresAt: Date }
  | { name: "lease_expired"; leaseExpiresAt: Date }
  | { name: "released" }
  | { name: "complete"; finishedBy: FinishedBy; response: StoredResponse };

export type PhaseName = Phase["name"];

/** A record as every module outside this folder sees it: columns decoded, phase named. */
export type IdempotencyRecord = {
  id: bigint;
  /** null for a keyless request. */
  idempotencyKey: string | null;
  route: string;
  apiClientId: number;
  requestHash: string;
  attempt: number;
  phase: Phase;
  /** When a request last started work that may have reached the gateway (see the schema). */
  lastAttemptAt: Date;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date;
};

/** A record whose columns no transition could have produced. It is reported, never given a made-up status. */
export class ImpossibleRecordError extends Error {
  constructor(id: bigint, why: string) {
    super(`idempotency record ${id} is in an impossible state: ${why}`);
    this.name = "ImpossibleRecordError";
  }
}

/** Keys are printable ASCII (checked by the header parser), stored as their bytes. */
export const keyToBytes = (key: string): Uint8Array<ArrayBuffer> => new Uint8Array(Buffer.from(key, "latin1"));
export const keyFromBytes = (bytes: Uint8Array): string => Buffer.from(bytes).toString("latin1");

/** The row as Prisma reads it (and as raw SQL rows are mapped to). */
export type RecordRow = Pick<
  IdempotentRequest,
  | "id"
  | "idempotencyKey"
  | "route"
  | "apiClientId"
  | "requestHash"
  | "state"
  | "attempt"
  | "leaseExpiresAt"
  | "lastAttemptAt"
  | "responseStatus"
  | "responseBody"
  | "responseRequestId"
  | "finishedBy"
  | "createdAt"
  | "updatedAt"
  | "expiresAt"
>;

export function phaseOf(row: RecordRow, now: Date = new Date()): Phase {
  if (row.state === "complete") {
    if (row.finishedBy === null) throw new ImpossibleRecordError(row.id, "complete without finished_by");
    if (row.responseStatus === null || row.responseBody === null) {
      throw new ImpossibleRecordError(row.id, "complete without a stored response");
    }
    if (row.leaseExpiresAt !== null) throw new ImpossibleRecordError(row.id, "complete with a lease");
    return {
      name: "complete",
      finishedBy: row.finishedBy,
      response: {
        status: row.responseStatus,
        body: row.responseBody,
        ...(row.responseRequestId !== null && { requestId: row.responseRequestId }),
      },
    };
  }
  if (row.finishedBy !== null || row.responseStatus !== null) {
    throw new ImpossibleRecordError(row.id, "in progress with a stored outcome");
  }
  if (row.leaseExpiresAt === null) return { name: "released" };
  return row.leaseExpiresAt > now
    ? { name: "held", leaseExpiresAt: row.leaseExpiresAt }
    : { name: "lease_expired", leaseExpiresAt: row.leaseExpiresAt };
}

export function decodeRecord(row: RecordRow, now: Date = new Date()): IdempotencyRecord {
  return {
    id: row.id,
    idempotencyKey: row.idempotencyKey === null ? null : keyFromBytes(row.idempotencyKey),
    route: row.route,
    apiClientId: row.apiClientId,
    requestHash: row.requestHash,
    attempt: row.attempt,
    phase: phaseOf(row, now),
    lastAttemptAt: row.lastAttemptAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    expiresAt: row.expiresAt,
  };
}

/** The phases a transition may start from; the statements below enforce the same in SQL. */
export const TRANSITIONS = {
  claim: { from: [] as PhaseName[], to: "held" },
  renew: { from: ["held", "lease_expired"] as PhaseName[], to: "held" },
  release: { from: ["held", "lease_expired"] as PhaseName[], to: "released" },
  complete: { from: ["held", "lease_expired"] as PhaseName[], to: "complete" },
  take: { from: ["released", "lease_expired"] as PhaseName[], to: "held" },
  expire: { from: ["complete"] as PhaseName[], to: "deleted" },
  /** Keyless, attempt 1, its claimer's own, before any work: see the header. */
  withdraw: { from: ["held", "lease_expired"] as PhaseName[], to: "deleted" },
} as const;

export type Transition = keyof typeof TRANSITIONS;

/** Past its lifetime a complete record's key names a new operation; nothing else ever expires. */
export const isExpired = (record: IdempotencyRecord, now: Date) =>
  record.phase.name === "complete" && record.expiresAt <= now;

/** Timing of a hold: how long it lasts, and how long its key lives once the record completes. */
export type Timing = { leaseMs: number; ttlMs: number };

/**
 * Every time a transition writes or compares is the database's own clock (one
 * value per statement), never the calling process's: two instances whose
 * clocks disagree must still agree on whose lease has ended (a sweeper whose
 * clock ran ahead would otherwise take over, and write off, a claim whose holder
 * is still at the gateway).
 */
const DB_NOW = "UTC_TIMESTAMP(6)";
const dbLater = "DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ? MICROSECOND)";
const micros = (ms: number) => Math.round(ms * 1000);

/** The INSERT that claims a key (or records a keyless request): held by this process, attempt 1. */
export function claimStatement(
  claim: {
    idempotencyKey: string | null;
    route: string;
    apiClientId: number;
    requestHash: string;
    customerId?: string | null;
    fields?: Record<string, unknown> | null;
  },
  { leaseMs, ttlMs }: Timing,
): Statement {
  return {
    sql: `INSERT INTO idempotent_requests
            (idempotency_key, route, api_client_id, customer_id, request_hash, request_fields, state, attempt,
             lease_expires_at, last_attempt_at, created_at, updated_at, expires_at)
          VALUES (?, ?, ?, ?, ?, ?, 'in_progress', 1, ${dbLater}, ${DB_NOW}, ${DB_NOW}, ${DB_NOW}, ${dbLater})`,
    values: [
      claim.idempotencyKey === null ? null : Buffer.from(claim.idempotencyKey, "latin1"),
      claim.route,
      claim.apiClientId,
      claim.customerId ?? null,
      claim.requestHash,
      claim.fields ? JSON.stringify(claim.fields) : null,
      micros(leaseMs),
      micros(ttlMs),
    ],
  };
}

/**
 * Who takes a claim over: a retry, whose work calls the gateway again (its
 * attempt time moves), or recovery (the sweeper, the reconciliation), which only
 * asks the gateway what happened and leaves the attempt time where it was.
 */
export type Taker = "retry" | "recovery";

/**
 * take: released or lease_expired -> held, attempt + 1. The key lives on for its
 * whole lifetime from now: a retry after many hours is still the same operation.
 */
export function takeStatement(record: IdempotencyRecord, { leaseMs, ttlMs }: Timing, taker: Taker): Statement {
  return {
    sql: `UPDATE idempotent_requests
             SET attempt = attempt + 1, lease_expires_at = ${dbLater}, updated_at = ${DB_NOW},
                 expires_at = GREATEST(expires_at, ${dbLater}),
                 last_attempt_at = ${taker === "retry" ? DB_NOW : "last_attempt_at"}
           WHERE id = ? AND attempt = ? AND state = 'in_progress'
             AND (lease_expires_at IS NULL OR lease_expires_at <= ${DB_NOW})`,
    values: [micros(leaseMs), micros(ttlMs), record.id, record.attempt],
  };
}

/** renew: the holder (same attempt) extends its lease before starting work it could not finish in time. */
export function renewStatement(held: { id: bigint; attempt: number }, { leaseMs }: Timing): Statement {
  return {
    sql: `UPDATE idempotent_requests SET lease_expires_at = ${dbLater}, updated_at = ${DB_NOW}
           WHERE id = ? AND attempt = ? AND state = 'in_progress' AND lease_expires_at IS NOT NULL`,
    values: [micros(leaseMs), held.id, held.attempt],
  };
}

/** release: the holder gives the claim back after an unknown outcome. */
export function releaseStatement(held: { id: bigint; attempt: number }): Statement {
  return {
    sql: `UPDATE idempotent_requests SET lease_expires_at = NULL, updated_at = ${DB_NOW}
           WHERE id = ? AND attempt = ? AND state = 'in_progress'`,
    values: [held.id, held.attempt],
  };
}

/**
 * complete: the holder (same attempt) stores the answer. Sent in one
 * transaction with the rows the work writes, before them (it locks the
 * record first), so that the answer and those rows are never apart.
 */
export function completeStatement(
  held: { id: bigint; attempt: number },
  response: StoredResponse,
  finishedBy: FinishedBy,
  { ttlMs }: Timing,
): Statement {
  return {
    sql: `UPDATE idempotent_requests
             SET state = 'complete', response_status = ?, response_body = ?, response_request_id = ?, finished_by = ?,
                 lease_expires_at = NULL, updated_at = ${DB_NOW}, expires_at = GREATEST(expires_at, ${dbLater})
           WHERE id = ? AND attempt = ? AND state = 'in_progress'`,
    values: [
      response.status,
      response.body,
      response.requestId ?? null,
      finishedBy,
      micros(ttlMs),
      held.id,
      held.attempt,
    ],
  };
}

/**
 * withdraw: the claimer of a keyless record, refused by the read sent with its
 * INSERT (the header is required), deletes it before doing any work. Fenced on
 * attempt 1 under a lease (the claim's own): once anyone else took it over (its
 * lease ended first), it is theirs to finish, and a released record (an unknown
 * gateway outcome) is never withdrawn; either way this matches no row.
 */
export function withdrawStatement(claimed: { id: bigint }): Statement {
  return {
    sql: `DELETE FROM idempotent_requests
           WHERE id = ? AND attempt = 1 AND state = 'in_progress' AND lease_expires_at IS NOT NULL
             AND idempotency_key IS NULL`,
    values: [claimed.id],
  };
}

/** expire: a complete record past its lifetime is deleted so its key can start a new operation. */
export function expireStatement(record: IdempotencyRecord): Statement {
  return {
    sql: `DELETE FROM idempotent_requests WHERE id = ? AND state = 'complete' AND expires_at <= ${DB_NOW}`,
    values: [record.id],
  };
}

/** expire, in bulk: the pruner's batch, oldest first along (state, expires_at). */
export function pruneBatchStatement(batchSize: number): Statement {
  return {
    sql: `DELETE FROM idempotent_requests WHERE state = 'complete' AND expires_at < ${DB_NOW}
          ORDER BY expires_at LIMIT ?`,
    values: [batchSize],
  };
}

/**
 * The records nobody is finishing, oldest first: in progress, untouched for
 * `idleMs`, and not under a live lease (released, or their holder's lease ran
 * out). Walks (state, updated_at).
 */
export function unfinishedStatement(idleMs: number, limit: number): Statement {
  return {
    sql: `SELECT ${SQL_COLUMNS} FROM idempotent_requests
           WHERE state = 'in_progress' AND updated_at < DATE_SUB(${DB_NOW}, INTERVAL ? MICROSECOND)
             AND (lease_expires_at IS NULL OR lease_expires_at <= ${DB_NOW})
           ORDER BY updated_at LIMIT ?`,
    values: [micros(idleMs), limit],
  };
}

/**
 * The record of a key on a route (the unique index). Not a transition: what it
 * finds decides the answer (runIdempotent.answerFor), never ownership, which
 * only the claim's INSERT or a fenced take can win.
 */
export function byKeyStatement(idempotencyKey: string, route: string): Statement {
  return {
    sql: `SELECT ${SQL_COLUMNS} FROM idempotent_requests WHERE idempotency_key = ? AND route = ?`,
    values: [Buffer.from(idempotencyKey, "latin1"), route],
  };
}

/**
 * The claim's read, sent in the same socket write as its INSERT (records.claim):
 * the record that holds the key, read only if the INSERT changed no row.
 * ROW_COUNT() is the INSERT's, the statement before it on the connection, so a
 * fresh claim, the common case, reads nothing back (its row would cost both
 * sides the parsing of a 1.8 kB result), and a claim that lost to the unique
 * index gets its answer without a second round trip.
 */
export function claimReadStatement(idempotencyKey: string, route: string): Statement {
  const read = byKeyStatement(idempotencyKey, route);
  return { ...read, sql: `${read.sql} AND ROW_COUNT() < 1` };
}

/** The columns of a record as raw SQL selects them, named as Prisma names them (so decodeRecord reads both). */
const COLUMNS = [
  ["id", "id"],
  ["idempotency_key", "idempotencyKey"],
  ["route", "route"],
  ["api_client_id", "apiClientId"],
  ["request_hash", "requestHash"],
  ["state", "state"],
  ["attempt", "attempt"],
  ["lease_expires_at", "leaseExpiresAt"],
  ["last_attempt_at", "lastAttemptAt"],
  ["response_status", "responseStatus"],
  ["response_body", "responseBody"],
  ["response_request_id", "responseRequestId"],
  ["finished_by", "finishedBy"],
  ["created_at", "createdAt"],
  ["updated_at", "updatedAt"],
  ["expires_at", "expiresAt"],
] as const;

const SQL_COLUMNS = COLUMNS.map(([column, name]) => (column === name ? column : `${column} AS ${name}`)).join(", ");

/**
 * The ledger check "every stored 201 names its own row": the ids of complete records of `route` answered 201
 * since `since` whose body names no row of theirs in `table` (the route's money rows, tied to their record).
 */
export function answersWithoutTheirRowStatement(route: string, table: "charges" | "refunds", since: Date): Statement {
  return {
    sql: `SELECT r.id FROM idempotent_requests r LEFT JOIN ${table} m ON m.idempotent_request_id = r.id
           WHERE r.route = ? AND r.state = 'complete' AND r.response_status = 201 AND r.updated_at >= ?
             AND (m.id IS NULL OR m.id <> JSON_UNQUOTE(JSON_EXTRACT(r.response_body, '$.id')))`,
    values: [route, since],
  };
}

/** Prisma filters for the lists of the dashboard, by phase (lease_expired is part of "in progress"). */
export const phaseWhere = {
  in_progress: { state: "in_progress" as const },
  complete: { state: "complete" as const },
  finished_by_sweeper: { finishedBy: { in: ["reconciled", "abandoned"] as FinishedBy[] } },
  abandoned: { finishedBy: "abandoned" as const },
  reconciled: { finishedBy: "reconciled" as const },
};

/** What the request log filters on: a phase, as displayed, or all in progress / all complete. */
export type PhaseFilter = PhaseDisplayKey | "in_progress" | "complete";

/**
 * The records of a phase as an SQL condition, with the index that finds them
 * when they are few (the phases a record only passes through) or null when they
 * are most of the table (walk by time).
 */
function phaseCondition(filter: PhaseFilter, now: Date): { sql: string; values: unknown[]; index: string | null } {
  const inProgress = "idempotent_requests_sweep_idx";
  switch (filter) {
    case "in_progress":
      return { sql: "state = 'in_progress'", values: [], index: inProgress };
    case "held":
      return { sql: "state = 'in_progress' AND lease_expires_at > ?", values: [now], index: inProgress };
    case "lease_expired":
      return { sql: "state = 'in_progress' AND lease_expires_at <= ?", values: [now], index: inProgress };
    case "released":
      return { sql: "state = 'in_progress' AND lease_expires_at IS NULL", values: [], index: inProgress };
    case "complete":
      return { sql: "state = 'complete'", values: [], index: null };
    case "request":
      return { sql: "state = 'complete' AND finished_by = 'request'", values: [], index: null };
    case "reconciled":
    case "abandoned":
      return {
        sql: "state = 'complete' AND finished_by = ?",
        values: [filter],
        index: "idempotent_requests_finished_idx",
      };
  }
}

/** The dashboard's filters over records (src/server/requests/log.ts). Stored statuses are 201, 402 and 500. */
export type RecordFilter = {
  phase?: PhaseFilter;
  status?: "201" | "402" | "500" | "none";
  route?: string;
  apiClientId?: number;
  customerId?: string;
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
    const phase = phaseCondition(f.phase, now);
    parts.push(phase);
    if (phase.index) indexes.push(phase.index);
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
    sql: `SELECT ${SQL_COLUMNS}, customer_id AS customerId
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
    sql: `SELECT ${SQL_COLUMNS}, customer_id AS customerId FROM idempotent_requests
           WHERE idempotency_key >= ? AND idempotency_key < ? ORDER BY idempotency_key, route LIMIT ?`,
    values: [low, high, limit],
  };
}

/** The display of each phase (and of each way a record completes), for people. */
export type PhaseDisplayKey = "held" | "lease_expired" | "released" | "request" | "reconciled" | "abandoned";

export const PHASE_DISPLAY: Record<PhaseDisplayKey, { label: string; description: string; tone: Tone }> = {
  held: {
    label: "In flight",
    description: "A process holds the claim and is waiting on the payment gateway.",
    tone: "progress",
  },
  lease_expired: {
    label: "Holder gone",
    description: "The process holding the claim stopped before finishing; the next retry or the sweeper takes over.",
    tone: "warning",
  },
  released: {
    label: "Outcome unknown",
    description: "The gateway's answer never arrived (the money may have moved); the next retry asks it again.",
    tone: "warning",
  },
  request: { label: "Complete", description: "The request stored its own outcome.", tone: "ok" },
  reconciled: {
    label: "Reconciled",
    description: "Finished by the sweeper: the gateway had charged, and the real answer was stored.",
    tone: "ok",
  },
  abandoned: {
    label: "Abandoned",
    description: "Finished by the sweeper: the gateway had not charged; answered 500 request_abandoned.",
    tone: "danger",
  },
};

/** An abandoned record's description, naming what the gateway showed (its stored answer says). */
const ABANDONED_BECAUSE = {
  refused: (code: string) =>
    `Finished by the sweeper: the gateway had received the request and refused it (${code}); ` +
    "answered 500 request_abandoned.",
  no_trace: "Finished by the sweeper: the gateway had no trace of the request; answered 500 request_abandoned.",
};
export type Tone = "progress" | "warning" | "ok" | "danger";

export function displayKey(phase: Phase): PhaseDisplayKey {
  return phase.name === "complete" ? phase.finishedBy : phase.name;
}

export function phaseDisplay(phase: Phase) {
  const key = displayKey(phase);
  const trace = key === "abandoned" && phase.name === "complete" ? traceOfAbandoned(phase.response.body) : undefined;
  if (!trace) return { key, ...PHASE_DISPLAY[key] };
  const description = trace.kind === "refused" ? ABANDONED_BECAUSE.refused(trace.code) : ABANDONED_BECAUSE.no_trace;
  return { key, ...PHASE_DISPLAY[key], description };
}
