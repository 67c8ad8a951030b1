import { errorBody } from "./apiError";

/**
 * What the gateway showed of an operation written off as never carried out: it received a request under the
 * operation's key and refused it (`refused`, with the gateway's code: request_expired for one carried out after
 * its Charge-Not-After), or it has no trace of one (`no_trace`: the request never got there, was still held up
 * on its way, or failed before the gateway kept anything of it; the answer claims none of these).
 */
export type GatewayTrace = { kind: "refused"; code: string } | { kind: "no_trace" };

/** What the written-off operation would have made: a charge, or a refund. */
export type MoneyMovement = "charge" | "refund";

/** Said by every write-off: it is final, so that no client reads the 500 as "retry" (its body says retryable). */
const FINAL = (what: MoneyMovement) =>
  ` This answer is final and replayed to every retry of this key, and no ${what} can be made under it any more; ` +
  "to try again, start a new operation with a new Idempotency-Key.";

const MESSAGES = {
  refused: (what: MoneyMovement, code: string) =>
    `The payment gateway received the ${what} and refused it (${code}); no ${what} was made.${FINAL(what)}`,
  no_trace: (what: MoneyMovement) =>
    `The payment gateway has no trace of the ${what}; no ${what} was made.${FINAL(what)}`,
};

/**
 * The body of 500 request_abandoned, stored and replayed, built here only: `gateway` says which trace the
 * write-off was decided on, and the message words the same, so that it never claims the request did not reach
 * a gateway that had refused it.
 */
export function abandonedBody(trace: GatewayTrace, what: MoneyMovement = "charge"): string {
  if (trace.kind === "refused") {
    const details = { gateway: "refused", gateway_code: trace.code };
    return errorBody("request_abandoned", MESSAGES.refused(what, trace.code), details);
  }
  return errorBody("request_abandoned", MESSAGES.no_trace(what), { gateway: "no_trace" });
}

/** Where a stored request_abandoned body says its trace's kind (a JSON path), for the request log's filter. */
export const ABANDONED_TRACE_PATH = "$.error.gateway";

/** The trace a stored request_abandoned body names; undefined for another body, or one stored before it named one. */
export function traceOfAbandoned(body: string): GatewayTrace | undefined {
  let error: { code?: unknown; gateway?: unknown; gateway_code?: unknown } | undefined;
  try {
    error = (JSON.parse(body) as { error?: typeof error }).error;
  } catch {
    return undefined;
  }
  if (error?.code !== "request_abandoned") return undefined;
  if (error.gateway === "refused") return { kind: "refused", code: String(error.gateway_code) };
  return error.gateway === "no_trace" ? { kind: "no_trace" } : undefined;
}
