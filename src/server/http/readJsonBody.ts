import { ApiError } from "./apiError";

/**
 * Reads a JSON request body with a size limit, strict UTF-8 and a clear error
 * for each way it can be wrong. The limit is checked while streaming too, so a
 * body without Content-Length cannot exceed it either.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const contentType = request.headers.get("content-type");
  if (contentType && !/^application\/([\w.+-]*\+)?json\b/i.test(contentType)) {
    throw new ApiError("unsupported_media_type", "Content-Type must be application/json");
  }
  const tooLarge = () => new ApiError("body_too_large", `Request body must be at most ${maxBytes} bytes`);
  const declared = Number(request.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();

  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      // A client that hangs up mid-body gets no answer anyway; say so plainly.
      const { done, value } = await reader.read().catch(() => {
        throw new ApiError("invalid_json", "The request body could not be read (connection closed)");
      });
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  const bytes = Buffer.concat(chunks);

  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError("invalid_json", "Request body is not valid UTF-8");
  }
  if (text.trim() === "") throw new ApiError("invalid_json", "Request body is empty; send a JSON object");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError("invalid_json", `Request body is not valid JSON: ${(error as Error).message}`);
  }
}
