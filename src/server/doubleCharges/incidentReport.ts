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

/** What the CSV needs of a case (incident.ts presents them so). */
export type CsvCase = {
  id: string;
  earlierId: string;
  customerId: string;
  apiClient: { name: string };
  evidence: { label: string };
  gapMs: number;
  amountCents: number;
  currency: string;
  requestedAt: Date;
  earlierRequestedAt: Date;
  status: {
    state: string;
    firstRefund: { chargeId: string; by: string; at: Date; notes: { note: string }[] } | null;
    leftCents: number;
  };
};

const csvCell = (v: unknown) => {
  const text = v === null || v === undefined ? "" : v instanceof Date ? v.toISOString() : String(v);
  // Quoted when needed; a leading =, +, - or @ would be a formula in a spreadsheet.
  const safe = /^[=+\-@]/.test(text) ? `'${text}` : text;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
};

/** A case's state in words, as the work list says it. */
export const CASE_STATES: Record<string, string> = {
  to_refund: "not refunded",
  refunding: "refund in flight",
  refunded: "refunded",
  both_refunded: "both charges refunded",
};

/**
 * The incident's cases as CSV (RFC 4180), one line per case, the work list's columns (the two charges and the
 * refund spelled out), times in UTC.
 */
export function incidentCsv(result: { cases: CsvCase[] }): string {
  const header = [
    "customer_id",
    "api_client",
    "evidence",
    "amount",
    "currency",
    "gap_seconds",
    "first_request_at_utc",
    "second_request_at_utc",
    "first_charge_id",
    "second_charge_id",
    "refund",
    "refunded_charge_id",
    "refunded_by",
    "refunded_at_utc",
    "refund_note",
    "left_to_give_back",
  ];
  const lines = result.cases.map((c) => {
    const refund = c.status.firstRefund;
    return [
      c.customerId,
      c.apiClient.name,
      c.evidence.label,
      (c.amountCents / 100).toFixed(2),
      c.currency,
      (c.gapMs / 1000).toFixed(3),
      c.earlierRequestedAt,
      c.requestedAt,
      c.earlierId,
      c.id,
      CASE_STATES[c.status.state] ?? c.status.state,
      refund?.chargeId,
      refund?.by,
      refund?.at,
      refund?.notes[0]?.note,
      (c.status.leftCents / 100).toFixed(2),
    ];
  });
  return `${[header, ...lines].map((l) => l.map(csvCell).join(",")).join("\r\n")}\r\n`;
}
