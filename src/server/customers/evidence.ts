/**
 * Whether two succeeded charges of the same client, customer, amount and
 * currency are a double charge or two purchases, by what their requests and
 * the first one's timeline show. A retry resends the same body (the same card
 * token too), so different bodies are two purchases. Identical bodies are a
 * retry when the client could not have known that the first had charged: the
 * second request arrived before a 201 for the first reached a connected client
 * (the first was still at the gateway, its client had timed out and gone, or
 * it was answered an error). Once the client had its 201, an identical request
 * is a repeat purchase, however soon. Without the first's timeline (its events
 * were lost), the old rule decides: keyless identical requests are a retry,
 * keyed ones only within NEW_KEY_RETRY_GAP_MS.
 * The one place for this rule and its wording (the customer page, the
 * duplicates list and the incident view all read it from here).
 */
import type { DuplicateEvidence } from "~/generated/prisma/client";

export type { DuplicateEvidence };

/** Without a timeline, identical keyed requests further apart than this are two purchases. */
export const NEW_KEY_RETRY_GAP_MS = 120_000;

/** What one attempt of a request was answered, from its key's timeline. */
export type AttemptAnswer = { at: Date | string; status: number; latencyMs: number | null; clientGone: boolean };

/**
 * What the classification needs of each charge: its request (key, canonical hash), when the request arrived and
 * when the charge was settled, and what its attempts were answered (null: the timeline has none).
 */
export type RequestEvidence = {
  idempotencyKey: string | null;
  requestHash: string;
  requestedAt?: Date | string;
  settledAt?: Date | string;
  answers?: AttemptAnswer[] | null;
};

const time = (d: Date | string | undefined) => (d === undefined ? undefined : new Date(d).getTime());

/** When a 201 for this charge first reached a connected client (a replay's counts); null: never, that we know. */
export function toldAt(request: Pick<RequestEvidence, "answers">): Date | null {
  const told = (request.answers ?? []).filter((a) => a.status === 201 && !a.clientGone).map((a) => time(a.at)!);
  return told.length ? new Date(Math.min(...told)) : null;
}

export function classifyPair(
  later: RequestEvidence | null | undefined,
  earlier: RequestEvidence | null | undefined,
  gapMs: number,
): DuplicateEvidence {
  if (!later || !earlier) return "no_evidence";
  if (later.requestHash !== earlier.requestHash) return "two_purchases";
  const retry = later.idempotencyKey === null && earlier.idempotencyKey === null ? "keyless_retry" : "new_key_retry";
  const arrived = time(later.requestedAt);
  if (arrived !== undefined) {
    const told = toldAt(earlier);
    if (told && told.getTime() <= arrived) return "repeat_purchase";
    // Its answers are on the timeline and none had told the client, or it was not even settled yet.
    const settled = time(earlier.settledAt);
    if ((earlier.answers?.length ?? 0) > 0 || (settled !== undefined && arrived < settled)) return retry;
  }
  if (retry === "keyless_retry") return retry;
  // Identical, at least one under a key (a key cannot charge twice, so the keys differ), no timeline.
  return Math.abs(gapMs) <= NEW_KEY_RETRY_GAP_MS ? retry : "two_purchases";
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
    description:
      "Identical requests without an Idempotency-Key, the second sent before the client had the first's answer: " +
      "a retry that charged again.",
    tone: "danger",
  },
  new_key_retry: {
    label: "Likely double charge: new key per attempt",
    description:
      "Identical requests under different Idempotency-Keys, the second sent before the client had the first's " +
      "answer: the client made a new key for its retry.",
    tone: "danger",
  },
  repeat_purchase: {
    label: "Repeat purchase",
    description:
      "Identical requests, but the second was sent after the first's success had reached the client: it bought " +
      "again knowing it had paid.",
    tone: "neutral",
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
