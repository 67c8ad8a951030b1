/**
 * API keys are looked up once and then trusted for API_KEY_CACHE_TTL_MS, so a
 * rotated key must stop working once that has passed (and a new one at once).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { hashApiKey } from "~/server/auth/apiClients";
import { closeConnections, db, newApiClient, postCharge, startAppInstance, uniqueKey } from "./helpers";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 3;
const BASE_URL = `http://127.0.0.1:${PORT}`;
const TTL_MS = 1_000;
let app: Awaited<ReturnType<typeof startAppInstance>>;

before(async () => {
  app = await startAppInstance(PORT, { API_KEY_CACHE_TTL_MS: String(TTL_MS) });
});
after(async () => {
  await app?.stop();
  await closeConnections();
});

/** A POST that authenticates but charges nothing (its body is invalid): 400 if the key is accepted, 401 if not. */
const tryKey = (apiKey: string) => postCharge({ apiKey, baseUrl: BASE_URL, key: uniqueKey("auth"), body: { amount_cents: -1 } }).then((r) => r.status);

test("a rotated API key keeps working for the cache lifetime, then gets 401; the new key works at once", async () => {
  const { id, apiKey: oldKey } = await newApiClient("rotation");
  assert.equal(await tryKey(oldKey), 400);

  const newKey = `sk_test_${randomBytes(24).toString("base64url")}`;
  await db.apiClient.update({ where: { id }, data: { keyHash: hashApiKey(newKey), keyPrefix: newKey.slice(0, 12) } });
  assert.equal(await tryKey(newKey), 400, "a new key is looked up, never refused from a cache");
  assert.equal(await tryKey(oldKey), 400, "still trusted from the cache");

  await new Promise((r) => setTimeout(r, TTL_MS + 200));
  assert.equal(await tryKey(oldKey), 401, "looked up again after the lifetime: unknown");
  assert.equal(await tryKey(newKey), 400);
});
