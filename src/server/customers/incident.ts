/**
 * The incident view: for a time range, the customers charged twice with
 * evidence (the likely double charges the sweeper classified, evidence.ts),
 * their pairs, the gaps as a histogram, and the same as CSV. Reads the small
 * possible_duplicate_charges table along (evidence, charge_created_at), at most
 * INCIDENT_LIMIT pairs: an incident's worth; a wider range says it was cut.
 */
import { z } from "zod";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { duplicatesScannedUntil, PAIR_COLUMNS, type PairRow, presentPairs } from "./duplicates";
import { LIKELY_DOUBLE_CHARGES } from "./evidence";
import { gapHistogram } from "./incidentReport";

export const INCIDENT_LIMIT = 2_000;
const MAX_RANGE_MS = 92 * 24 * 3_600_000;

export const incidentInput = z.object({ since: z.date(), until: z.date() });

export async function incident(input: z.infer<typeof incidentInput>) {
  if (input.since >= input.until) throw new DomainError("invalid", "The range must start before it ends.");
  if (input.until.getTime() - input.since.getTime() > MAX_RANGE_MS) {
    throw new DomainError("invalid", "The range can be at most 92 days.");
  }
  const rows = await db.$queryRawUnsafe<PairRow[]>(
    `SELECT ${PAIR_COLUMNS} FROM possible_duplicate_charges USE INDEX (possible_duplicate_charges_evidence_idx)
      WHERE evidence IN (${LIKELY_DOUBLE_CHARGES.map(() => "?").join(", ")})
        AND charge_created_at >= ? AND charge_created_at < ?
      ORDER BY charge_created_at DESC, charge_id DESC LIMIT ?`,
    ...LIKELY_DOUBLE_CHARGES,
    input.since,
    input.until,
    INCIDENT_LIMIT + 1,
  );
  const pairs = await presentPairs(rows.slice(0, INCIDENT_LIMIT));
  const byCustomer = new Map<string, typeof pairs>();
  for (const p of pairs) {
    const key = `${p.apiClientId}\u0000${p.customerId}`;
    byCustomer.set(key, [...(byCustomer.get(key) ?? []), p]);
  }
  const customers = [...byCustomer.values()].map((list) => ({
    customerId: list[0]!.customerId,
    apiClient: list[0]!.apiClient,
    pairs: list,
    extraCents: list.reduce((sum, p) => sum + p.amountCents, 0),
    currencies: [...new Set(list.map((p) => p.currency))],
  }));
  return {
    customers,
    pairs: pairs.length,
    truncated: rows.length > INCIDENT_LIMIT,
    histogram: gapHistogram(pairs.map((p) => p.gapMs)),
    scannedUntil: await duplicatesScannedUntil(),
  };
}

export type Incident = Awaited<ReturnType<typeof incident>>;
