/**
 * API keys are looked up once and then trusted for API_KEY_CACHE_TTL_MS (at
 * most; a revocation or rotation empties the caches at once), so a key whose
 * grace period ended stops working, and a new key works at once. The app
 * instance here is not the process that changes the keys, as with several
 * instances in production.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { cliContext } from "~/server/audit/audit";
import { revokeKey, rotateKey } from "~/server/apiClients/manage";
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
const tryKey = (apiKey: string) =>
  postCharge({ apiKey, baseUrl: BASE_URL, key: uniqueKey("auth"), body: { amount_cents: -1 } }).then((r) => r.status);
const pastTtl = () => new Promise((r) => setTimeout(r, TTL_MS + 200));

test("a key rotated without grace gets 401 (test/keyRevocation.test.ts: within 1 s); the new key at once", async () => {
  const { id, apiKey: oldKey } = await newApiClient("rotation");
  assert.equal(await tryKey(oldKey), 400);

  const { apiKey: newKey } = await rotateKey(id, 0, cliContext("test"));
  assert.equal(await tryKey(newKey), 400, "a new key is looked up, never refused from a cache");

  await pastTtl();
  assert.equal(await tryKey(oldKey), 401, "looked up again after the lifetime: expired");
  assert.equal(await tryKey(newKey), 400);
});

test("during a rotation's grace period both keys work; once it ends the old key gets 401", async () => {
  const { id, apiKey: oldKey } = await newApiClient("grace");
  const { apiKey: newKey, graceEndsAt } = await rotateKey(id, 3_600_000, cliContext("test"));
  assert.ok(graceEndsAt.getTime() > Date.now() + 3_500_000);
  await pastTtl();
  assert.equal(await tryKey(oldKey), 400, "the old key works during the grace period");
  assert.equal(await tryKey(newKey), 400);

  // The grace period ends (moved into the past rather than waiting an hour).
  await db.apiKey.updateMany({
    where: { apiClientId: id, expiresAt: { not: null } },
    data: { expiresAt: new Date(Date.now() - 1000) },
  });
  await pastTtl();
  assert.equal(await tryKey(oldKey), 401);
  assert.equal(await tryKey(newKey), 400);
});

test("a revoked key is refused by other instances within the cache lifetime", async () => {
  const { id, apiKey } = await newApiClient("revoked");
  assert.equal(await tryKey(apiKey), 400);
  const key = await db.apiKey.findFirstOrThrow({ where: { apiClientId: id } });
  await revokeKey(key.id, cliContext("test"));
  await pastTtl();
  assert.equal(await tryKey(apiKey), 401);
  const audit = await db.auditEvent.findFirstOrThrow({ where: { action: "api_key.revoked", targetId: String(id) } });
  assert.equal(audit.actorLabel, "test");
});
