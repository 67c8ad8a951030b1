/**
 * Start-up checks of the web server (Node.js runtime only; see
 * src/instrumentation.ts): a bad SESSION_SECRET, or any invalid environment
 * variable, stops the process before it serves a single request.
 */
export async function boot() {
  try {
    // Imported here, so that src/env.ts's own refusal (it parses on import) is caught too.
    const { sessionSecret } = await import("./auth/session");
    sessionSecret();
  } catch (error) {
    console.error(`Refusing to start: ${(error as Error).message}`);
    process.exit(1);
  }
  const { prepareDummyHash } = await import("./auth/password");
  await prepareDummyHash();
  const { startDiagnostics } = await import("./observability/diagnostics");
  startDiagnostics();
}
