/**
 * `Prefer: wait=N` (RFC 7240): how long the client would like the server to
 * wait for a final answer. A retry that finds its operation in flight waits
 * for it up to that long instead of answering 409 at once.
 */
export const MAX_WAIT_SECONDS = 10;

/** The wait the client asked for, capped; 0 when it asked for none (or for something unreadable). */
export function preferredWaitSeconds(prefer: string | null): number {
  if (!prefer) return 0;
  // Preferences are comma-separated tokens, each with optional parameters after ";".
  for (const preference of prefer.split(",")) {
    const match = /^\s*wait\s*=\s*"?(\d{1,6})"?\s*(;|$)/i.exec(preference);
    if (match) return Math.min(Number(match[1]), MAX_WAIT_SECONDS);
  }
  return 0;
}

/** The header that says a wait was applied (sent only when the server did wait). */
export const preferenceApplied = (seconds: number) => ({ "Preference-Applied": `wait=${seconds}` });
