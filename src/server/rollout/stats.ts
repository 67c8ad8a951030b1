import { db } from "~/server/db";

export type Granularity = "hour" | "day";

type SeriesRow = { bucket: Date | string; keyed: bigint | number; keyless: bigint | number };
type ClientRow = {
  api_client_id: number;
  name: string;
  key_prefix: string | null;
  keyed: bigint | number;
  keyless: bigint | number;
  last_keyless_at: Date | string | null;
};

const toDate = (v: Date | string) => (v instanceof Date ? v : new Date(`${v.replace(" ", "T")}Z`));
const share = (keyless: number, keyed: number) => (keyed + keyless === 0 ? 0 : keyless / (keyed + keyless));

function bucketStarts(granularity: Granularity, since: Date, until: Date): Date[] {
  const start = new Date(since);
  if (granularity === "hour") start.setUTCMinutes(0, 0, 0);
  else start.setUTCHours(0, 0, 0, 0);
  const step = granularity === "hour" ? 3_600_000 : 86_400_000;
  const starts: Date[] = [];
  for (let t = start.getTime(); t <= until.getTime(); t += step) starts.push(new Date(t));
  return starts;
}

/**
 * Keyless share of POST /api/charges over time and per API client, from the
 * hourly buckets. A client is "still to chase" while it sends keyless requests.
 */
export async function keylessTraffic(opts: { granularity: Granularity; since: Date }) {
  const bucketExpr = opts.granularity === "hour" ? "bucket_start" : "CAST(DATE(bucket_start) AS DATETIME)";
  const series = await db.$queryRawUnsafe<SeriesRow[]>(
    `SELECT ${bucketExpr} AS bucket, SUM(keyed) AS keyed, SUM(keyless) AS keyless
       FROM request_count_buckets WHERE bucket_start >= ? GROUP BY bucket ORDER BY bucket`,
    opts.since,
  );
  const clients = await db.$queryRawUnsafe<ClientRow[]>(
    `SELECT b.api_client_id, c.name, SUM(b.keyed) AS keyed, SUM(b.keyless) AS keyless,
            MAX(b.last_keyless_at) AS last_keyless_at,
            (SELECT k.key_prefix FROM api_keys k WHERE k.api_client_id = c.id
              ORDER BY k.revoked_at IS NULL DESC, k.id DESC LIMIT 1) AS key_prefix
       FROM request_count_buckets b JOIN api_clients c ON c.id = b.api_client_id
      WHERE b.bucket_start >= ? GROUP BY b.api_client_id, c.name ORDER BY keyless DESC, c.name`,
    opts.since,
  );
  const lastKeyless = await db.requestCountBucket.aggregate({ _max: { lastKeylessAt: true } });
  const counted = new Map(series.map((r) => [toDate(r.bucket).getTime(), { keyed: Number(r.keyed), keyless: Number(r.keyless) }]));
  return {
    // Every bucket of the period, empty ones included, so the chart's time axis is true.
    series: bucketStarts(opts.granularity, opts.since, new Date()).map((bucket) => {
      const { keyed, keyless } = counted.get(bucket.getTime()) ?? { keyed: 0, keyless: 0 };
      return { bucket, keyed, keyless, keylessShare: share(keyless, keyed) };
    }),
    clients: clients.map((r) => ({
      apiClientId: r.api_client_id,
      name: r.name,
      keyPreview: r.key_prefix ? `${r.key_prefix}…` : "no key",
      keyed: Number(r.keyed),
      keyless: Number(r.keyless),
      keylessShare: share(Number(r.keyless), Number(r.keyed)),
      lastKeylessAt: r.last_keyless_at ? toDate(r.last_keyless_at) : null,
    })),
    lastKeylessAt: lastKeyless._max.lastKeylessAt,
  };
}

/** Keyed and keyless POSTs per client since `since`, and the keyless share (what /api/metrics exports). */
export async function keylessShareByClient(since: Date) {
  type Row = { api_client_id: number; name: string; keyed: bigint | number; keyless: bigint | number };
  const rows = await db.$queryRawUnsafe<Row[]>(
    `SELECT b.api_client_id, c.name, SUM(b.keyed) AS keyed, SUM(b.keyless) AS keyless
       FROM request_count_buckets b JOIN api_clients c ON c.id = b.api_client_id
      WHERE b.bucket_start >= ? GROUP BY b.api_client_id, c.name`,
    since,
  );
  return rows.map((r) => ({
    apiClientId: r.api_client_id,
    name: r.name,
    keyed: Number(r.keyed),
    keyless: Number(r.keyless),
    keylessShare: share(Number(r.keyless), Number(r.keyed)),
  }));
}
