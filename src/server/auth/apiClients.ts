import { createHash, randomBytes } from "node:crypto";
import { db } from "~/server/db";

/** API keys are 192 random bits, so a plain sha256 is a safe way to store them. */
export function hashApiKey(apiKey: string): string {
  return createHash("sha256").update(apiKey).digest("hex");
}

export async function createApiClient(name: string) {
  const apiKey = `sk_test_${randomBytes(24).toString("base64url")}`;
  const client = await db.apiClient.create({
    data: { name, keyHash: hashApiKey(apiKey), keyPrefix: apiKey.slice(0, 12) },
  });
  return { client, apiKey };
}

/** The client behind `Authorization: Bearer <key>`, or null. */
export async function authenticateApiClient(authorization: string | null) {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match) return null;
  return db.apiClient.findUnique({ where: { keyHash: hashApiKey(match[1]!) } });
}
