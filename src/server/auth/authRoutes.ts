/**
 * The HTTP side of signing in: the route handlers under /api/auth are thin
 * wrappers around this. Answers use the API's error format.
 */
import { z } from "zod";
import { errorResponse } from "~/server/http/apiError";
import { refuseCrossSite } from "~/server/http/crossSite";
import { handleApi } from "~/server/http/handleApi";
import { readJsonBody } from "~/server/http/readJsonBody";
import { requestInfo, type RequestInfo } from "~/server/http/requestInfo";
import { MAX_PASSWORD_LENGTH } from "./password";
import type { SignInResult } from "./staffLogin";

const MAX_BODY_BYTES = 4096;

export const credentialsSchema = z.object({
  email: z.string().max(255),
  password: z.string().min(1).max(MAX_PASSWORD_LENGTH),
});
export const codeSchema = z.object({ code: z.string().max(16) });

function toResponse(result: SignInResult): Response {
  const ok = (status: string) => Response.json({ status }, { headers: { "Cache-Control": "no-store" } });
  switch (result.kind) {
    case "signed_in":
      return ok("signed_in");
    case "second_factor_required":
      return ok("second_factor_required");
    case "invalid_credentials":
      return errorResponse("invalid_credentials");
    case "invalid_code":
      return errorResponse("invalid_credentials", { message: "Wrong authentication code." });
    case "no_pending_sign_in":
      return errorResponse("unauthorized", { message: "Sign in with your e-mail and password first." });
    case "throttled":
      return errorResponse("too_many_attempts", { headers: { "Retry-After": String(result.retryAfterSeconds) } });
  }
}

/** POST handler: same-origin check, a small JSON body checked by `schema`, then `run`. */
export function authRoute<T>(schema: z.ZodType<T>, run: (input: T, request: RequestInfo) => Promise<SignInResult>) {
  return (request: Request) =>
    handleApi(request, async () => {
      const refused = refuseCrossSite(request);
      if (refused) return refused;
      const parsed = schema.safeParse(await readJsonBody(request, MAX_BODY_BYTES));
      if (!parsed.success) return errorResponse("invalid_request");
      return toResponse(await run(parsed.data, requestInfo(request.headers)));
    });
}
