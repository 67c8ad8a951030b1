import { randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import { env } from "~/env";
import type { ApiClient } from "~/generated/prisma/client";
import { db } from "~/server/db";
import { hashApiKey } from "./apiKeyHash";

export { hashApiKey };

export async function createApiClient(name: string) {
  const apiKey = `sk_test_${randomBytes(24).toString("base64url")}`;
  const client = await db.apiClient.create({
    data: { name, keyHash: hashApiKey(apiKey), keyPrefix: apiKey.slice(0, 12) },
  });
  return { client, apiKey };
}

/**
 * Clients found by key hash, kept briefly: the lookup was one database round
 * trip on every request, including the retries a storm is made of. Only hits
 * are kept, so a new key works at once; a rotated one keeps working for up to
 * API_KEY_CACHE_TTL_MS in each running process.
 */
const knownClients = new LRUCache<string, ApiClient>({ max: 10_000, ttl: env.API_KEY_CACHE_TTL_MS });

/** The client behind `Authorization: Bearer <key>`, or null. */
export async function authenticateApiClient(authorization: string | null): Promise<ApiClient | null> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match) return null;
  const keyHash = hashApiKey(match[1]!);
  const known = knownClients.get(keyHash);
  if (known) return known;
  const client = await db.apiClient.findUnique({ where: { keyHash } });
  if (client) knownClients.set(keyHash, client);
  return client;
}
