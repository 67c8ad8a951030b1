import { authRoute, codeSchema } from "~/server/auth/authRoutes";
import { verifySecondFactor } from "~/server/auth/staffLogin";

export const dynamic = "force-dynamic";

/** `{code}` (TOTP), after the password step → 200 `{status: "signed_in"}`, 401, 429 + Retry-After. */
export const POST = authRoute(codeSchema, (input, request) => verifySecondFactor(input.code, request));
