import { env } from "~/env";
import { ApiError } from "./apiError";

/**
 * Deeper than any body the API or the dashboard takes (a few levels), far shallower than what would exhaust the
 * stack of whatever walks the parsed value (validation, superjson): a deeper body is refused before it is parsed.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Reads a JSON request body with a size limit, a time limit, strict UTF-8 and
 * a clear error for each way it can be wrong.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const contentType = request.headers.get("content-type");
  if (contentType && !/^application\/([\w.+-]*\+)?json\b/i.test(contentType)) {
    throw new ApiError("unsupported_media_type", "Content-Type must be application/json");
  }
  const bytes = await readBodyBytes(request, maxBytes);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError("invalid_json", "Request body is not valid UTF-8");
  }
  if (text.trim() === "") throw new ApiError("invalid_json", "Request body is empty; send a JSON object");
  const tooDeep = jsonDepthProblem(text);
  if (tooDeep) throw new ApiError("invalid_json", tooDeep);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError("invalid_json", `Request body is not valid JSON: ${(error as Error).message}`);
  }
}

/**
 * The body's bytes, at most `maxBytes` (checked while streaming too, so a body without Content-Length cannot
 * exceed it either), and in full within BODY_READ_TIMEOUT_MS of the first read: a client trickling its body
 * would otherwise hold a connection and a request's memory for minutes (408).
 */
export async function readBodyBytes(
  request: Request,
  maxBytes: number,
  timeoutMs = env.BODY_READ_TIMEOUT_MS,
): Promise<Buffer<ArrayBuffer>> {
  const tooLarge = () => new ApiError("body_too_large", `Request body must be at most ${maxBytes} bytes`);
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  if (!request.body) return Buffer.alloc(0);

  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ApiError("request_timeout", `The request body did not arrive in full within ${timeoutMs} ms`)),
      timeoutMs,
    );
  });
  try {
    for (;;) {
      // A client that hangs up mid-body gets no answer anyway; say so plainly.
      const read = reader.read().catch(() => {
        throw new ApiError("invalid_json", "The request body could not be read (connection closed)");
      });
      read.catch(() => {}); // when the deadline wins the race, a later failure of this read is nobody's to answer
      const { done, value } = await Promise.race([read, late]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) throw tooLarge();
      chunks.push(value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks);
}

/**
 * Why a JSON text is nested too deeply to parse safely, or null. One pass over the text, counting brackets
 * outside strings; whether it is JSON at all is JSON.parse's to say.
 */
export function jsonDepthProblem(text: string, maxDepth = MAX_JSON_DEPTH): string | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return `Request body is nested more than ${maxDepth} levels deep`;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return null;
}
