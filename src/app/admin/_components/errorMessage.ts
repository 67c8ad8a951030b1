/**
 * What a failed query or mutation says to the reader. A refusal the server worded for people (not found, a
 * conflict, not allowed, signed out) is shown as it is; anything else is said plainly, never with the client
 * library's or the validator's own words ("Unable to transform response from server", a JSON list of issues),
 * which name nothing the reader can act on.
 */
type ErrorLike = { message: string; data?: { code?: string; zodError?: unknown } | null } | null | undefined;

const WORDED_BY_SERVER = new Set(["NOT_FOUND", "CONFLICT", "FORBIDDEN", "UNAUTHORIZED", "TOO_MANY_REQUESTS"]);

export function userMessage(error: ErrorLike): string {
  if (!error) return "no answer";
  const code = error.data?.code;
  if (code && WORDED_BY_SERVER.has(code)) return error.message;
  if (code === "BAD_REQUEST") {
    return error.data?.zodError
      ? "what was asked is not valid (check the filters or the values entered)"
      : error.message;
  }
  if (code === "INTERNAL_SERVER_ERROR") return "the server failed (the error is in its log); try again";
  // No tRPC error shape at all: the network, a proxy's error page, a server restarting.
  return "no usable answer from the server (it may be restarting or unreachable); try again";
}
