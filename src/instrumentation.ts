/**
 * Runs once when the Next.js server starts, before it serves anything. Route
 * modules load lazily, so a bad setting would otherwise surface at the first
 * sign-in; checking here makes `next start` exit instead.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== "nodejs" || process.env.NEXT_PHASE === "phase-production-build") return;
  const { boot } = await import("./server/boot");
  await boot();
}
