/**
 * Whether two succeeded charges of the same client, customer, amount and
 * currency are a double charge or two purchases, by what their requests show.
 * A retry resends the same body (the same card token too), so identical
 * canonical requests are its signature; a new purchase has a new token. Without
 * a key, identical requests are a retry whatever the gap within the window;
 * under two keys, only close together (the client made a new key per attempt):
 * a customer may buy the same thing twice on purpose, each purchase keyed.
 * The one place for this rule and its wording (the customer page, the
 * duplicates list and the incident view all read it from here).
 */
import type { DuplicateEvidence } from "~/generated/prisma/client";

export type { DuplicateEvidence };

/** Identical keyed requests further apart than this are two purchases (the incident's retries came 15-17 s apart). */
export const NEW_KEY_RETRY_GAP_MS = 120_000;

/** What the classification needs of each charge's request: whether it had a key, and its canonical hash. */
export type RequestEvidence = { idempotencyKey: string | null; requestHash: string };

export function classifyPair(
  later: RequestEvidence | null | undefined,
  earlier: RequestEvidence | null | undefined,
  gapMs: number,
): DuplicateEvidence {
  if (!later || !earlier) return "no_evidence";
  if (later.requestHash !== earlier.requestHash) return "two_purchases";
  if (later.idempotencyKey === null && earlier.idempotencyKey === null) return "keyless_retry";
  // Identical, and at least one under a key (a key cannot charge twice, so the keys differ).
  return Math.abs(gapMs) <= NEW_KEY_RETRY_GAP_MS ? "new_key_retry" : "two_purchases";
}

/** The kinds that are likely double charges: highlighted, and listed by the incident view. */
export const LIKELY_DOUBLE_CHARGES: readonly DuplicateEvidence[] = ["keyless_retry", "new_key_retry"];

export const isLikelyDoubleCharge = (e: DuplicateEvidence | null | undefined) =>
  e !== null && e !== undefined && LIKELY_DOUBLE_CHARGES.includes(e);

export const EVIDENCE_DISPLAY: Record<
  DuplicateEvidence | "unclassified",
  { label: string; description: string; tone: "danger" | "warning" | "neutral" }
> = {
  keyless_retry: {
    label: "Likely double charge, no key",
    description: "Both requests were sent without an Idempotency-Key and are identical: a retry that charged again.",
    tone: "danger",
  },
  new_key_retry: {
    label: "Likely double charge: new key per attempt",
    description:
      "Identical requests under different Idempotency-Keys, close together: the client made a new key for its retry.",
    tone: "danger",
  },
  two_purchases: {
    label: "Two purchases",
    description: "The requests differ (another card token, say), or came far apart each under its own key.",
    tone: "neutral",
  },
  no_evidence: {
    label: "No evidence",
    description: "A request record had expired before the pair was found: the requests cannot be compared.",
    tone: "warning",
  },
  unclassified: {
    label: "Not classified yet",
    description: "Found before the evidence was kept; the sweeper classifies it on its next scans.",
    tone: "warning",
  },
};

export const evidenceDisplay = (e: DuplicateEvidence | null) => ({
  key: e ?? "unclassified",
  ...EVIDENCE_DISPLAY[e ?? "unclassified"],
  likely: isLikelyDoubleCharge(e),
});
