/**
 * The incident view, a work list: for a time range of arrivals (when the later
 * charge's request came), every likely double charge the sweeper classified
 * (evidence.ts) as a case of two charges, with where it stands (cases.ts:
 * refunded or not, of which charge, by whom, what is left to give back), the
 * gaps between the two requests as a histogram (a client's timeout shows as a
 * spike), and the same as CSV. Reads the small possible_duplicate_charges table
 * along (evidence, requested_at), at most INCIDENT_LIMIT pairs: an incident's
 * worth; a wider range says it was cut.
 */
import { z } from "zod";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { duplicatesScannedUntil, PAIR_COLUMNS, type PairRow, presentPairs } from "~/server/customers/duplicates";
import { LIKELY_DOUBLE_CHARGES } from "~/server/customers/evidence";
import { caseStatus, halvesOf } from "./cases";
import { gapHistogram } from "./incidentReport";

export const INCIDENT_LIMIT = 2_000;
const MAX_RANGE_MS = 92 * 24 * 3_600_000;
const HOUR = 3_600_000;

/** A range, or the last `hours` up to now (a preset: the range moves on as the page refreshes). */
export const incidentInput = z.union([
  z.object({ since: z.date(), until: z.date() }),
  z.object({
    hours: z
      .number()
      .int()
      .min(1)
      .max(MAX_RANGE_MS / HOUR),
  }),
]);

export async function incident(input: z.infer<typeof incidentInput>) {
  const now = new Date();
  const { since, until } =
    "hours" in input ? { since: new Date(now.getTime() - input.hours * HOUR), until: now } : input;
  if (since >= until) throw new DomainError("invalid", "The range must start before it ends.");
  if (until.getTime() - since.getTime() > MAX_RANGE_MS) {
    throw new DomainError("invalid", "The range can be at most 92 days.");
  }
  const rows = await db.$queryRawUnsafe<PairRow[]>(
    `SELECT ${PAIR_COLUMNS} FROM possible_duplicate_charges USE INDEX (possible_duplicate_charges_evidence_idx)
      WHERE evidence IN (${LIKELY_DOUBLE_CHARGES.map(() => "?").join(", ")})
        AND requested_at >= ? AND requested_at < ?
      ORDER BY requested_at DESC, charge_id DESC LIMIT ?`,
    ...LIKELY_DOUBLE_CHARGES,
    since,
    until,
    INCIDENT_LIMIT + 1,
  );
  const pairs = await presentPairs(rows.slice(0, INCIDENT_LIMIT));
  const halves = await halvesOf(pairs.flatMap((p) => [p.id, p.earlierId]));
  const cases = pairs.map((p) => ({
    ...p,
    earlierRequestedAt: new Date(p.requestedAt.getTime() - p.gapMs),
    status: caseStatus(p.amountCents, [halves.get(p.id), halves.get(p.earlierId)]),
  }));
  const totals = new Map<string, { currency: string; extraCents: number; givenBackCents: number; leftCents: number }>();
  for (const c of cases) {
    const t = totals.get(c.currency) ?? { currency: c.currency, extraCents: 0, givenBackCents: 0, leftCents: 0 };
    t.extraCents += c.amountCents;
    t.givenBackCents += c.status.givenBackCents;
    t.leftCents += c.status.leftCents;
    totals.set(c.currency, t);
  }
  return {
    since,
    until,
    cases,
    customers: new Set(cases.map((c) => `${c.apiClientId}\u0000${c.customerId}`)).size,
    resolved: cases.filter((c) => c.status.resolved).length,
    totals: [...totals.values()],
    truncated: rows.length > INCIDENT_LIMIT,
    histogram: gapHistogram(cases.map((p) => p.gapMs)),
    scannedUntil: await duplicatesScannedUntil(),
  };
}

export type Incident = Awaited<ReturnType<typeof incident>>;
