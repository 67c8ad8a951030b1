/**
 * The incident view's pure parts (no database, so unit tests import them): the gap histogram and the CSV export.
 */

/** Gap buckets, in seconds: one second each up to a minute (a client's timeout shows as a spike), then wider. */
const EDGES = [...Array.from({ length: 61 }, (_, s) => s), 120, 300, 600, 1800, 3600];

export function gapHistogram(gapsMs: number[]) {
  const buckets = EDGES.slice(0, -1).map((from, i) => ({ fromSeconds: from, toSeconds: EDGES[i + 1]!, pairs: 0 }));
  for (const ms of gapsMs) {
    const s = ms / 1000;
    const bucket = buckets.find((b) => s >= b.fromSeconds && s < b.toSeconds) ?? buckets.at(-1)!;
    bucket.pairs++;
  }
  // Trim the empty buckets at both ends so that a chart shows the range that has data.
  const first = buckets.findIndex((b) => b.pairs > 0);
  const last = buckets.findLastIndex((b) => b.pairs > 0);
  return first < 0 ? [] : buckets.slice(first, last + 1);
}

/** What the CSV needs of a pair (incident.ts presents them so). */
export type CsvPair = {
  id: string;
  earlierId: string;
  customerId: string;
  apiClient: { name: string };
  evidence: { label: string };
  gapMs: number;
  amountCents: number;
  currency: string;
  createdAt: Date;
  requests: { later: { idempotencyKey: string | null } | null; earlier: { idempotencyKey: string | null } | null };
};

const csvCell = (v: unknown) => {
  const text = v === null || v === undefined ? "" : v instanceof Date ? v.toISOString() : String(v);
  // Quoted when needed; a leading =, +, - or @ would be a formula in a spreadsheet.
  const safe = /^[=+\-@]/.test(text) ? `'${text}` : text;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
};

/** The incident's pairs as CSV (RFC 4180), one line per pair, times in UTC. */
export function incidentCsv(result: { customers: { pairs: CsvPair[] }[] }): string {
  const header = [
    "customer_id",
    "api_client",
    "evidence",
    "gap_seconds",
    "amount",
    "currency",
    "charge_id",
    "charged_at_utc",
    "earlier_charge_id",
    "later_idempotency_key",
    "earlier_idempotency_key",
  ];
  const lines = result.customers.flatMap((c) =>
    c.pairs.map((p) => [
      p.customerId,
      p.apiClient.name,
      p.evidence.label,
      (p.gapMs / 1000).toFixed(3),
      (p.amountCents / 100).toFixed(2),
      p.currency,
      p.id,
      p.createdAt,
      p.earlierId,
      p.requests.later?.idempotencyKey ?? "",
      p.requests.earlier?.idempotencyKey ?? "",
    ]),
  );
  return `${[header, ...lines].map((l) => l.map(csvCell).join(",")).join("\r\n")}\r\n`;
}
