import { authRoute, credentialsSchema } from "~/server/auth/authRoutes";
import { signIn } from "~/server/auth/staffLogin";

export const dynamic = "force-dynamic";

/** `{email, password}` → 200 `{status: "signed_in" | "second_factor_required"}`, 401, 429 + Retry-After. */
export const POST = authRoute(credentialsSchema, (input, request) => signIn(input.email, input.password, request));
