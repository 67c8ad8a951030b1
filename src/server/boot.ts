/**
 * Start-up checks of the web server (Node.js runtime only; see
 * src/instrumentation.ts): a bad SESSION_SECRET or TOTP_ENCRYPTION_KEY, or any
 * invalid environment variable, stops the process before it serves a single
 * request. It also says whether engineers must use two-factor sign-in.
 */
export async function boot() {
  try {
    // Imported here, so that src/env.ts's own refusal (it parses on import) is caught too.
    const { sessionSecret } = await import("./auth/session");
    sessionSecret();
    const { env } = await import("~/env");
    const { totpKeyProblem } = await import("~/lib/totpKeyProblem");
    const problem = totpKeyProblem(env.TOTP_ENCRYPTION_KEY);
    if (problem) throw new Error(`TOTP_ENCRYPTION_KEY ${problem}`);
    console.log(twoFactorPolicy(env.STAFF_REQUIRE_2FA, env.NODE_ENV, process.env.STAFF_REQUIRE_2FA));
    if (env.NODE_ENV === "production" && !env.STAFF_REFUND_REQUIRE_2FA)
      console.log(
        "WARNING: refunds from the dashboard do NOT need two-factor sign-in (STAFF_REFUND_REQUIRE_2FA=false).",
      );
    if (env.NODE_ENV === "production" && process.env.API_KEY_MODE === undefined)
      console.log("API keys are issued as sk_test_… (API_KEY_MODE unset); a live deployment sets API_KEY_MODE=live.");
  } catch (error) {
    console.error(`Refusing to start: ${(error as Error).message}`);
    process.exit(1);
  }
  const { stampPeerAddresses } = await import("./http/peerAddress");
  stampPeerAddresses();
  const { prepareDummyHash } = await import("./auth/password");
  await prepareDummyHash();
  const { startDiagnostics } = await import("./observability/diagnostics");
  startDiagnostics();
}

/** The start-up line about two-factor sign-in; switching it off in production is said loudly. */
function twoFactorPolicy(required: boolean, nodeEnv: string, configured: string | undefined): string {
  if (required) return `Two-factor sign-in: required for engineers (STAFF_REQUIRE_2FA=${configured ?? "unset"}).`;
  if (nodeEnv === "production")
    return "WARNING: two-factor sign-in is NOT required for engineers: STAFF_REQUIRE_2FA=false switches it off.";
  return `Two-factor sign-in: not required for engineers (NODE_ENV=${nodeEnv}; STAFF_REQUIRE_2FA=true requires it).`;
}
