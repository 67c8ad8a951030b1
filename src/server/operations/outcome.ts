import type { ApiErrorCode, ErrorDetails } from "~/server/http/apiError";
import type { StoredResponse } from "~/server/idempotency";

/**
 * What a money route's request comes to, from the domain operation to the HTTP response and its metrics label
 * (moneyRoute.ts maps it once). Everything that is not a stored answer or a 409 is an error of the registry.
 */
export type OperationOutcome =
  /** A stored answer: this request's own, or replayed. `expiresAt`: until when its key names this operation. */
  | { kind: "response"; response: StoredResponse; replayed: boolean; waited?: boolean; expiresAt?: Date }
  /** Another attempt holds the operation, which started at `since`. */
  | { kind: "in_progress"; since: Date | null; waited?: boolean; expiresAt?: Date }
  | { kind: "error"; code: ApiErrorCode; message?: string; details?: ErrorDetails };

export const errorOutcome = (code: ApiErrorCode, extra: { message?: string; details?: ErrorDetails } = {}) =>
  ({ kind: "error", code, ...extra }) as const satisfies OperationOutcome;

/** The answer as /api/metrics counts it: fresh, replay, in_progress or the error's code. */
export function outcomeLabel(outcome: OperationOutcome): string {
  if (outcome.kind === "response") return outcome.replayed ? "replay" : "fresh";
  return outcome.kind === "error" ? outcome.code : outcome.kind;
}
