import { errorBody } from "./apiError";

/**
 * What the gateway showed of an operation written off as never charged: it received a request under the
 * operation's key and refused it without charging (`refused`, with the gateway's code: request_expired for
 * one carried out after its Charge-Not-After), or it has no trace of one (`no_trace`: the request never got
 * there, or failed before the gateway kept anything of it).
 */
export type GatewayTrace = { kind: "refused"; code: string } | { kind: "no_trace" };

const MESSAGES = {
  refused: (code: string) =>
    `The payment gateway received the charge and refused it without charging (${code}); no charge was made.`,
  no_trace: "The payment gateway has no trace of the charge (it never arrived there); no charge was made.",
};

/**
 * The body of 500 request_abandoned, stored and replayed, built here only: `gateway` says which trace the
 * write-off was decided on, and the message words the same, so that it never claims the request did not reach
 * a gateway that had refused it.
 */
export function abandonedBody(trace: GatewayTrace): string {
  if (trace.kind === "refused") {
    return errorBody("request_abandoned", MESSAGES.refused(trace.code), {
      gateway: "refused",
      gateway_code: trace.code,
    });
  }
  return errorBody("request_abandoned", MESSAGES.no_trace, { gateway: "no_trace" });
}

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
