import { createHash } from "node:crypto";

/**
 * API keys are 192 random bits, so a plain sha256 is a safe way to store them.
 * Its own module (no database, no environment), for the scripts that seed clients.
 */
export function hashApiKey(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex");
}
