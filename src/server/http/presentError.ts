import Negotiator from "negotiator";
import { docPath, errorSpec, isApiErrorCode, isRetryableCode } from "@charges/client/errorRegistry";

const PROBLEM_JSON = "application/problem+json";

/** The client asked for RFC 9457 problem details (and prefers them to plain JSON). */
export function wantsProblemJson(request: Request): boolean {
  const accept = request.headers.get("accept");
  if (!accept?.includes(PROBLEM_JSON)) return false;
  return new Negotiator({ headers: { accept } }).mediaType(["application/json", PROBLEM_JSON]) === PROBLEM_JSON;
}

/**
 * Finishes an error answer, fresh or replayed from storage: `doc_url` and `retryable` in the body,
 * `Retry-After` and (for the idempotency errors) `Link: <doc>; rel="describedby"`
 * from the registry, and an RFC 9457 problem body when the client asked for one.
 * Anything that is not one of our error bodies passes through untouched.
 */
export async function presentError(request: Request, response: Response): Promise<Response> {
  if (response.status < 400 || !response.headers.get("content-type")?.startsWith("application/json")) return response;
  const text = await response.text();
  const parsed = parseErrorBody(text);
  const headers = new Headers(response.headers);
  if (!parsed) return new Response(text, { status: response.status, headers });

  const { code, message, ...details } = parsed;
  const spec = errorSpec(code);
  // Said in the body, from the registry, because a status cannot say it: 500 is both internal_error (retry) and
  // a replayed request_abandoned (final), and retry libraries read statuses.
  const retryable = isRetryableCode(code);
  const docUrl = new URL(docPath(code), publicOrigin(request)).href;
  if (spec.retryAfterSeconds !== undefined && !headers.has("retry-after")) {
    headers.set("Retry-After", String(spec.retryAfterSeconds));
  }
  if (spec.idempotency) headers.set("Link", `<${docUrl}>; rel="describedby"; type="text/html"`);

  let body: string;
  if (wantsProblemJson(request)) {
    headers.set("Content-Type", `${PROBLEM_JSON}; charset=utf-8`);
    const problem = {
      type: docUrl,
      title: spec.title,
      status: response.status,
      detail: message,
      code,
      retryable,
      doc_url: docUrl,
    };
    body = JSON.stringify({ ...details, ...problem });
  } else {
    body = JSON.stringify({ error: { code, message, ...details, retryable, doc_url: docUrl } });
  }
  headers.delete("content-length");
  return new Response(body, { status: response.status, headers });
}

/**
 * The origin the client addressed. Next.js builds `request.url` from its own
 * bind address ("localhost"), not from what the client sent; a proxy in front
 * says which scheme the client used.
 */
function publicOrigin(request: Request): string {
  const url = new URL(request.url);
  const host = request.headers.get("x-forwarded-host") ?? request.headers.get("host") ?? url.host;
  const proto = request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim() ?? url.protocol.replace(":", "");
  try {
    return new URL(`${proto}://${host}`).origin;
  } catch {
    return url.origin;
  }
}

type ErrorFields = { code: Parameters<typeof errorSpec>[0]; message: string; [detail: string]: unknown };

function parseErrorBody(text: string): ErrorFields | undefined {
  try {
    const error = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    if (error && isApiErrorCode(error.code) && typeof error.message === "string") return error as ErrorFields;
  } catch {
    // Not JSON after all: pass it through.
  }
  return undefined;
}
