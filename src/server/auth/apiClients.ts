import { randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import { env } from "~/env";
import type { ApiClient } from "~/generated/prisma/client";
import { db } from "~/server/db";
import { registerRetained } from "~/server/observability/retained";
import { hashApiKey } from "./apiKeyHash";
import { watchKeyChanges } from "./keyRevocations";

export { hashApiKey };

/** The prefix of the keys this deployment issues (API_KEY_MODE: the one scheme; docs/security.md). */
export const apiKeyPrefix = (mode: "test" | "live" = env.API_KEY_MODE) => (mode === "live" ? "sk_live_" : "sk_test_");

/** A new secret key, its hash and the prefix the dashboard shows. */
export function generateApiKey() {
  const apiKey = `${apiKeyPrefix()}${randomBytes(24).toString("base64url")}`;
  return { apiKey, keyHash: hashApiKey(apiKey), keyPrefix: apiKey.slice(0, 12) };
}

/** A client with one key, for tests, benchmarks and the demo seed (the dashboard uses src/server/apiClients). */
export async function createApiClient(name: string) {
  const { apiKey, keyHash, keyPrefix } = generateApiKey();
  const client = await db.apiClient.create({ data: { name, keys: { create: { keyHash, keyPrefix } } } });
  return { client, apiKey };
}

type KnownKey = { client: ApiClient; expiresAt: Date | null };

/**
 * Keys found by hash, kept briefly: the lookup was one database round trip on
 * every request, including the retries a storm is made of. Only valid keys are
 * kept, so a new key works at once. A rotated key's grace end is checked on
 * every request; a revocation or rotation anywhere empties every process's
 * cache within a second (keyRevocations.ts), and API_KEY_CACHE_TTL_MS bounds an
 * entry's life should that signal be missed. One cache per process (on
 * globalThis), whichever route bundles import this.
 */
const globalForKeys = globalThis as unknown as {
  knownApiKeys?: LRUCache<string, KnownKey>;
  apiKeysGeneration?: { value: number };
};
globalForKeys.knownApiKeys ??= new LRUCache<string, KnownKey>({ max: 10_000, ttl: env.API_KEY_CACHE_TTL_MS });
const knownKeys = globalForKeys.knownApiKeys;
registerRetained("API keys cached", () => knownKeys.size);
/** Moves on every announced change, so that a lookup that began before one does not fill the cache after it. */
globalForKeys.apiKeysGeneration ??= { value: 0 };
const generation = globalForKeys.apiKeysGeneration;
let watching = false;

const usable = (key: { expiresAt: Date | null; revokedAt?: Date | null }, now = new Date()) =>
  !key.revokedAt && (!key.expiresAt || key.expiresAt > now);

/** The client behind `Authorization: Bearer <key>`, or null. */
export async function authenticateApiClient(authorization: string | null): Promise<ApiClient | null> {
  if (!watching) {
    watching = true;
    watchKeyChanges(() => {
      generation.value += 1;
      knownKeys.clear();
    });
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match) return null;
  const keyHash = hashApiKey(match[1]!);
  const known = knownKeys.get(keyHash);
  if (known) {
    if (usable(known)) return known.client;
    knownKeys.delete(keyHash);
    return null;
  }
  const startedAt = generation.value;
  const key = await db.apiKey.findUnique({ where: { keyHash }, include: { apiClient: true } });
  if (!key || !usable(key)) return null;
  if (generation.value === startedAt) knownKeys.set(keyHash, { client: key.apiClient, expiresAt: key.expiresAt });
  return key.apiClient;
}

/** Drops a key from this process's cache (revocation, rotation), so this process honours it at once. */
export function forgetApiKey(keyHash: string): void {
  knownKeys.delete(keyHash);
}
