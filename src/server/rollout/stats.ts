/**
 * What engineers decide the rollout on, from the hourly buckets of
 * src/server/rollout/counters.ts: the keyless share over time (all clients, and
 * per client; all money routes, or one), each client's and each route's
 * traffic in the safe-to-enforce window, whether enforcing is safe and, if
 * not, who blocks it and when it would turn safe, and what a switch would
 * reject now. Keyed traffic is counted as operations (the share's
 * denominator) and as attempts (a separate figure); keyless as accepted and
 * refused, apart: a refused request neither blocks nor moves "clean from".
 */
import { env } from "~/env";
import { db } from "~/server/db";
import { toDate } from "~/lib/sqlDate";
import { hourBucket } from "./counters";
import { automaticGranularity, DAY, type Granularity, HOUR, MINUTE, SERIES_SPAN } from "./granularity";
import { getIdempotencyMode } from "./mode";

export type { Granularity };
export { SERIES_SPAN };
/** At most this many clients get a line of their own in the chart. */
export const MAX_CHART_CLIENTS = 6;

type Num = bigint | number | null;
const n = (v: Num) => Number(v ?? 0);

export type SeriesPoint = {
  bucket: Date;
  /** Keyed operations. */
  keyed: number;
  /** Keyed HTTP requests, retries included (null per minute: only the hourly counts know them). */
  keyedAttempts: number | null;
  /** Accepted keyless requests. */
  keyless: number;
  /** Refused keyless requests, not in the share (null per minute: a refused request leaves no record). */
  rejected: number | null;
  /** null when there was no traffic at all: not the same as 0 % keyless. */
  keylessShare: number | null;
};

const STEP = { minute: MINUTE, hour: HOUR, day: DAY } as const;

function bucketStarts(granularity: Granularity, since: Date, until: Date): Date[] {
  const start = startOf(granularity, since);
  const step = STEP[granularity];
  const starts: Date[] = [];
  for (let t = start.getTime(); t <= until.getTime(); t += step) starts.push(new Date(t));
  return starts;
}

type CountRow = { bucket: Date | string; keyed: Num; keyedAttempts?: Num; keyless: Num; rejected?: Num };

/**
 * Every count of the hours that match `where` (on api_client_id and
 * bucket_start), folded or not, as one derived table: the closed hours the
 * sweeper has summed (request_count_hours) and the shard rows still open
 * (foldCounts.ts). Read in one statement, so from one snapshot. Its values are
 * `where`'s, twice.
 */
function hourlyCounts(where: string, values: unknown[], alias = "counted") {
  const columns =
    "api_client_id, route, bucket_start, keyed, keyed_attempts, keyless, keyless_rejected, last_keyless_at";
  return {
    sql: `(SELECT ${columns} FROM request_count_hours WHERE ${where}
           UNION ALL
           SELECT ${columns} FROM request_count_buckets WHERE ${where}) ${alias}`,
    values: [...values, ...values],
  };
}

/**
 * The counts per bucket since `from`, of all clients together (clientIds null)
 * or of each client asked for, of every route or of one. Days are read from
 * what the fold has summed per day (request_count_days) plus the shard rows
 * not folded yet: a month of days is one row per client and day instead of a
 * month of hours.
 */
function countsSql(granularity: Granularity, clientIds: number[] | null, from: Date, route: string | null) {
  const routeIs = route === null ? "" : "route = ? AND ";
  const clientIn = routeIs + (clientIds ? `api_client_id IN (${clientIds.map(() => "?").join(", ")}) AND ` : "");
  const clientValues = [...(route === null ? [] : [route]), ...(clientIds ?? [])];
  const client = clientIds ? "api_client_id AS clientId, " : "";
  const groupClient = clientIds ? "clientId, " : "";
  const sums =
    "SUM(keyed) AS keyed, SUM(keyed_attempts) AS keyedAttempts, SUM(keyless) AS keyless, " +
    "SUM(keyless_rejected) AS rejected";
  if (granularity === "minute") {
    // The first hours of a history are one dot per hour: per minute, from the request records themselves (every
    // accepted request keeps one for at least a key's lifetime; a keyed operation is one record, its retries none).
    const recordClientIn = clientIn
      .replaceAll("route = ?", "r.route = ?")
      .replaceAll("api_client_id", "r.api_client_id");
    return {
      sql: `SELECT ${clientIds ? "r.api_client_id AS clientId, " : ""}
                   DATE_FORMAT(r.created_at, '%Y-%m-%d %H:%i:00') AS bucket,
                   SUM(r.idempotency_key IS NOT NULL) AS keyed, SUM(r.idempotency_key IS NULL) AS keyless
              FROM idempotent_requests r
             WHERE ${recordClientIn}r.created_at >= ?
             GROUP BY ${groupClient}bucket ORDER BY bucket`,
      values: [...clientValues, from],
    };
  }
  if (granularity === "hour") {
    const counted = hourlyCounts(`${clientIn}bucket_start >= ?`, [...clientValues, from]);
    return {
      sql: `SELECT ${client}bucket_start AS bucket, ${sums} FROM ${counted.sql}
             GROUP BY ${groupClient}bucket ORDER BY bucket`,
      values: counted.values,
    };
  }
  return {
    sql: `SELECT ${client}bucket, ${sums}
            FROM (SELECT api_client_id, CAST(day AS DATETIME) AS bucket, keyed, keyed_attempts, keyless,
                         keyless_rejected
                    FROM request_count_days WHERE ${clientIn}day >= ?
                  UNION ALL
                  SELECT api_client_id, CAST(DATE(bucket_start) AS DATETIME), keyed, keyed_attempts, keyless,
                         keyless_rejected
                    FROM request_count_buckets WHERE ${clientIn}bucket_start >= ?) counted
           GROUP BY ${groupClient}bucket ORDER BY bucket`,
    values: [...clientValues, from, ...clientValues, from],
  };
}

/** Every bucket of the period, empty ones included (as null shares), so that the time axis tells the truth. */
function fill(granularity: Granularity, since: Date, now: Date, rows: CountRow[]) {
  const counted = new Map(rows.map((r) => [toDate(r.bucket).getTime(), r]));
  return bucketStarts(granularity, since, now).map((bucket): SeriesPoint => {
    const r = counted.get(bucket.getTime());
    const keyed = n(r?.keyed ?? 0);
    const keyless = n(r?.keyless ?? 0);
    const perMinute = granularity === "minute";
    return {
      bucket,
      keyed,
      keyedAttempts: perMinute ? null : n(r?.keyedAttempts ?? 0),
      keyless,
      rejected: perMinute ? null : n(r?.rejected ?? 0),
      keylessShare: keyed + keyless === 0 ? null : keyless / (keyed + keyless),
    };
  });
}

function startOf(granularity: Granularity, at: Date): Date {
  if (granularity === "minute") return new Date(Math.floor(at.getTime() / MINUTE) * MINUTE);
  return granularity === "hour" ? hourBucket(at) : new Date(new Date(at).setUTCHours(0, 0, 0, 0));
}

/** The first hour anything was counted in (null: nothing yet). */
async function firstCountedHour(): Promise<Date | null> {
  const [first] = await db.$queryRawUnsafe<{ first: Date | string | null }[]>(
    `SELECT MIN(m) AS first FROM (SELECT MIN(bucket_start) AS m FROM request_count_hours
                                  UNION ALL SELECT MIN(bucket_start) FROM request_count_buckets) firsts`,
  );
  return first?.first ? toDate(first.first) : null;
}

/** Switches of the mode (global, or one client's) since `from`, oldest first: the chart marks them. */
async function modeChangesSince(from: Date) {
  const rows = await db.auditEvent.findMany({
    where: { action: { in: ["mode.changed", "client_mode.changed"] }, createdAt: { gte: from } },
    orderBy: { createdAt: "asc" },
    take: 50,
    select: { createdAt: true, action: true, targetId: true, details: true },
  });
  return rows.map((r) => {
    const details = r.details ? (JSON.parse(r.details) as Record<string, unknown>) : {};
    return {
      at: r.createdAt,
      scope: r.action === "mode.changed" ? ("global" as const) : ("client" as const),
      apiClientId: r.action === "mode.changed" ? null : Number(r.targetId),
      to: String(details.to ?? ""),
    };
  });
}

/**
 * The keyless share over time: all clients together, and one line per client asked for; every route, or one.
 * The range follows the history there is: from the first counted hour when that is later than the span's start,
 * so that a short history fills the chart instead of sitting at its right edge.
 */
export async function keylessSeries(
  asked: Granularity | "auto",
  clientIds: number[],
  now = new Date(),
  route: string | null = null,
) {
  const first = await firstCountedHour();
  const granularity = asked === "auto" ? automaticGranularity(first, now) : asked;
  const spanStart = startOf(granularity, new Date(now.getTime() - SERIES_SPAN[granularity]));
  const from = first && first > spanStart ? startOf(granularity, first) : spanStart;
  const allSql = countsSql(granularity, null, from, route);
  const clientsSql = countsSql(granularity, clientIds, from, route);
  const [all, perClient, modeChanges] = await Promise.all([
    db.$queryRawUnsafe<CountRow[]>(allSql.sql, ...allSql.values),
    clientIds.length
      ? db.$queryRawUnsafe<(CountRow & { clientId: number })[]>(clientsSql.sql, ...clientsSql.values)
      : [],
    modeChangesSince(from),
  ]);
  return {
    granularity,
    since: from,
    spanStart,
    modeChanges,
    all: fill(granularity, from, now, all),
    clients: clientIds.map((id) => ({
      apiClientId: id,
      points: fill(
        granularity,
        from,
        now,
        perClient.filter((r) => Number(r.clientId) === id),
      ),
    })),
  };
}

type ClientWindowRow = {
  clientId: number;
  keyed: Num;
  keyedAttempts: Num;
  keyless: Num;
  rejected: Num;
  lastKeylessAt: Date | string | null;
  lastAcceptedKeylessAt: Date | string | null;
  firstBucket: Date | string;
};

/**
 * The decision: each client's and each route's traffic in the window, who
 * blocks enforcing (a client whose header is not required on its own and that
 * had a keyless request accepted in the window: one already enforced cannot
 * send another), whether the evidence is enough, and what a switch would
 * reject (keyless requests accepted since the start of the previous hour).
 */
export async function rolloutStatus(now = new Date()) {
  const windowHours = env.SAFE_TO_ENFORCE_HOURS;
  const windowStart = new Date(now.getTime() - windowHours * HOUR);
  const lastHourFrom = new Date(hourBucket(now).getTime() - HOUR);
  const inWindow = hourlyCounts("bucket_start >= ?", [hourBucket(windowStart)]);
  const inLastHour = hourlyCounts("bucket_start >= ?", [lastHourFrom]);
  const [mode, windowRows, routeRows, lastHourRows, clients, firstCountedHourRead] = await Promise.all([
    getIdempotencyMode(),
    // last_keyless_at is the last accepted keyless request (a refused one never sets it), so refusing traffic
    // after enforcing never moves "clean from".
    db.$queryRawUnsafe<ClientWindowRow[]>(
      `SELECT api_client_id AS clientId, SUM(keyed) AS keyed, SUM(keyed_attempts) AS keyedAttempts,
              SUM(keyless) AS keyless, SUM(keyless_rejected) AS rejected, MAX(last_keyless_at) AS lastKeylessAt,
              MAX(CASE WHEN keyless > 0 THEN last_keyless_at END) AS lastAcceptedKeylessAt,
              MIN(bucket_start) AS firstBucket
         FROM ${inWindow.sql} GROUP BY api_client_id`,
      ...inWindow.values,
    ),
    db.$queryRawUnsafe<{ route: string; keyed: Num; keyedAttempts: Num; keyless: Num; rejected: Num }[]>(
      `SELECT route, SUM(keyed) AS keyed, SUM(keyed_attempts) AS keyedAttempts, SUM(keyless) AS keyless,
              SUM(keyless_rejected) AS rejected
         FROM ${inWindow.sql} GROUP BY route ORDER BY route`,
      ...inWindow.values,
    ),
    db.$queryRawUnsafe<{ clientId: number; accepted: Num }[]>(
      `SELECT api_client_id AS clientId, SUM(keyless) AS accepted FROM ${inLastHour.sql} GROUP BY api_client_id`,
      ...inLastHour.values,
    ),
    db.$queryRawUnsafe<{ id: number; name: string; keyRequiredSince: Date | null; keyPrefix: string | null }[]>(
      `SELECT c.id, c.name, c.key_required_since AS keyRequiredSince,
              (SELECT k.key_prefix FROM api_keys k WHERE k.api_client_id = c.id
                ORDER BY k.revoked_at IS NULL DESC, k.id DESC LIMIT 1) AS keyPrefix
         FROM api_clients c ORDER BY c.name`,
    ),
    firstCountedHour(),
  ]);
  const byClient = new Map(windowRows.map((r) => [Number(r.clientId), r]));
  const lastHour = new Map(lastHourRows.map((r) => [Number(r.clientId), n(r.accepted)]));
  const date = (v: Date | string | null) => (v === null ? null : toDate(v));

  const perClient = clients.map((c) => {
    const r = byClient.get(c.id);
    const lastAccepted = date(r?.lastAcceptedKeylessAt ?? null);
    const keyed = n(r?.keyed ?? 0);
    const keyless = n(r?.keyless ?? 0);
    const enforced = mode === "required" ? ("global" as const) : c.keyRequiredSince ? ("client" as const) : null;
    const blocking = enforced === null && lastAccepted !== null && lastAccepted >= windowStart;
    return {
      apiClientId: c.id,
      name: c.name,
      keyPreview: c.keyPrefix ? `${c.keyPrefix}…` : "no key",
      keyRequiredSince: c.keyRequiredSince,
      enforced,
      keyed,
      keyedAttempts: n(r?.keyedAttempts ?? 0),
      keyless,
      rejected: n(r?.rejected ?? 0),
      keylessShare: keyed + keyless === 0 ? null : keyless / (keyed + keyless),
      lastKeylessAt: date(r?.lastKeylessAt ?? null),
      lastAcceptedKeylessAt: lastAccepted,
      blocking,
      /** If it sent no more keyless requests from now: when its window would be clean. */
      cleanAt: blocking ? new Date(lastAccepted!.getTime() + windowHours * HOUR) : null,
      keylessLastHour: lastHour.get(c.id) ?? 0,
    };
  });

  const keyedInWindow = perClient.reduce((sum, c) => sum + c.keyed, 0);
  // Two reads at two moments: counts the app flushed between them are in the window but may be missing from the
  // first counted hour (it read empty tables, and "safe at" went missing). No first hour after one the window saw.
  const firsts = [firstCountedHourRead, ...windowRows.map((r) => toDate(r.firstBucket))].filter((d) => d !== null);
  const firstCountedAt = firsts.length ? new Date(Math.min(...firsts.map((d) => d.getTime()))) : null;
  const observedHours = firstCountedAt ? (now.getTime() - firstCountedAt.getTime()) / HOUR : 0;
  const blocking = perClient.filter((c) => c.blocking).sort((a, b) => b.keyless - a.keyless);
  const evidence = {
    keyedInWindow,
    minKeyed: env.SAFE_TO_ENFORCE_MIN_KEYED,
    observedHours,
    minHoursObserved: env.SAFE_TO_ENFORCE_MIN_HOURS_OBSERVED,
    enoughKeyed: keyedInWindow >= env.SAFE_TO_ENFORCE_MIN_KEYED,
    enoughHistory: observedHours >= env.SAFE_TO_ENFORCE_MIN_HOURS_OBSERVED,
  };
  const historyAt = firstCountedAt
    ? new Date(firstCountedAt.getTime() + env.SAFE_TO_ENFORCE_MIN_HOURS_OBSERVED * HOUR)
    : null;
  // The earliest it could turn safe if every blocking client stopped now (and keyed traffic keeps up).
  const candidates = [...blocking.map((c) => c.cleanAt!), ...(evidence.enoughHistory || !historyAt ? [] : [historyAt])];
  const safeAt = candidates.length ? new Date(Math.max(...candidates.map((d) => d.getTime()))) : null;
  return {
    mode,
    now,
    windowHours,
    windowStart,
    lastHourFrom,
    clients: perClient,
    blocking: blocking.map((c) => ({
      apiClientId: c.apiClientId,
      name: c.name,
      keyless: c.keyless,
      cleanAt: c.cleanAt,
    })),
    evidence,
    safeToEnforce: mode === "optional" && blocking.length === 0 && evidence.enoughKeyed && evidence.enoughHistory,
    safeAt,
    rejectedInWindow: perClient.reduce((sum, c) => sum + c.rejected, 0),
    keyedAttemptsInWindow: perClient.reduce((sum, c) => sum + c.keyedAttempts, 0),
    /** The window's traffic per money route (every route counted, whatever its name). */
    routes: routeRows.map((r) => {
      const keyed = n(r.keyed);
      const keyless = n(r.keyless);
      return {
        route: r.route,
        keyed,
        keyedAttempts: n(r.keyedAttempts),
        keyless,
        rejected: n(r.rejected),
        keylessShare: keyed + keyless === 0 ? null : keyless / (keyed + keyless),
      };
    }),
  };
}

const share = (keyless: number, keyed: number) => (keyed + keyless === 0 ? 0 : keyless / (keyed + keyless));

/** Keyed and keyless POSTs per client since `since`, and the keyless share (what /api/metrics exports). */
export async function keylessShareByClient(since: Date) {
  type Row = { api_client_id: number; name: string; keyed: bigint | number; keyless: bigint | number };
  const counted = hourlyCounts("bucket_start >= ?", [since], "b");
  const rows = await db.$queryRawUnsafe<Row[]>(
    `SELECT b.api_client_id, c.name, SUM(b.keyed) AS keyed, SUM(b.keyless) AS keyless
       FROM ${counted.sql} JOIN api_clients c ON c.id = b.api_client_id
      GROUP BY b.api_client_id, c.name`,
    ...counted.values,
  );
  return rows.map((r) => ({
    apiClientId: r.api_client_id,
    name: r.name,
    keyed: Number(r.keyed),
    keyless: Number(r.keyless),
    keylessShare: share(Number(r.keyless), Number(r.keyed)),
  }));
}
