/**
 * How the dashboard words a record's phase (lifecycle.phaseKey names it): a label, a sentence and a tone, and for a
 * write-off what the gateway showed (its stored answer says).
 */
import { traceOfAbandoned } from "~/server/http/abandonedAnswer";
// The pure model itself, not ./reading: wording needs no database (and its unit test loads none).
import { phaseKey, type Phase, type PhaseKey } from "~/server/idempotency/lifecycle";

/** The display of each phase (and of each way a record completes), for people. */
export const PHASE_DISPLAY: Record<PhaseKey, { label: string; description: string; tone: Tone }> = {
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

/** Why a record was abandoned, in a few words: the request log's column and filter. */
export const ABANDONED_REASONS = {
  no_trace: "no trace at the gateway",
  refused: "the gateway refused it",
} as const;
export type AbandonedReason = keyof typeof ABANDONED_REASONS;

export function phaseDisplay(phase: Phase) {
  const key = phaseKey(phase);
  const trace = key === "abandoned" && phase.name === "complete" ? traceOfAbandoned(phase.response.body) : undefined;
  if (!trace) return { key, ...PHASE_DISPLAY[key], because: null };
  const description = trace.kind === "refused" ? ABANDONED_BECAUSE.refused(trace.code) : ABANDONED_BECAUSE.no_trace;
  const because =
    trace.kind === "refused" ? `${ABANDONED_REASONS.refused} (${trace.code})` : ABANDONED_REASONS.no_trace;
  return { key, ...PHASE_DISPLAY[key], description, because };
}
