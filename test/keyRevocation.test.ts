/**
 * A key revoked (or rotated away) through one app instance stops working in
 * the others within a second, although each caches keys for
 * API_KEY_CACHE_TTL_MS (30 s here): the change is announced through the
 * database and every instance polls for it every 500 ms (src/server/auth/keyRevocations.ts).
 * The tests check the mechanism, not the machine's speed: the other instance refuses the key before its cached
 * entry could have expired, so the announcement, not the TTL, ended it.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { APP_URL, closeConnections, db, newApiClient, postCharge, startAppInstance, uniqueKey } from "./helpers";
import { createStaffAccount, signedIn } from "./staffHttp";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 8;
const CACHE_TTL_MS = 30_000;
const OTHER_URL = `http://127.0.0.1:${PORT}`;
let other: Awaited<ReturnType<typeof startAppInstance>>;

before(async () => {
  other = await startAppInstance(PORT, { API_KEY_CACHE_TTL_MS: String(CACHE_TTL_MS) });
});
after(async () => {
  await other?.stop();
  await closeConnections();
});

/** A POST that authenticates but charges nothing (its body is invalid): 400 if the key is accepted, 401 if not. */
const tryKey = (apiKey: string, baseUrl: string) =>
  postCharge({ apiKey, baseUrl, key: uniqueKey("auth"), body: { amount_cents: -1 } }).then((r) => r.status);

/**
 * Polls the other instance every 50 ms until it refuses the key: how long after `cachedAt` (when it last accepted,
 * and cached, the key) it did, or Infinity if it still accepted it when that entry's TTL was over.
 */
async function refusedAfterCachingMs(apiKey: string, cachedAt: number): Promise<number> {
  while (performance.now() - cachedAt < CACHE_TTL_MS) {
    if ((await tryKey(apiKey, OTHER_URL)) === 401) return performance.now() - cachedAt;
    await new Promise((r) => setTimeout(r, 50));
  }
  return Number.POSITIVE_INFINITY;
}

test("a key revoked through one instance is refused by another before its cached entry expires", async () => {
  const engineer = await signedIn(await createStaffAccount("engineer"));
  const { id, apiKey } = await newApiClient("revoked everywhere");
  const cachedAt = performance.now(); // the entry is made after this, and lives CACHE_TTL_MS
  assert.equal(await tryKey(apiKey, OTHER_URL), 400, "the other instance has it cached");
  assert.equal(await tryKey(apiKey, APP_URL), 400);
  const key = await db.apiKey.findFirstOrThrow({ where: { apiClientId: id } });
  assert.equal((await engineer.mutate("apiClients.revokeKey", { keyId: key.id })).status, 200);
  const ms = await refusedAfterCachingMs(apiKey, cachedAt);
  assert.ok(ms < CACHE_TTL_MS, `refused ${ms.toFixed(0)} ms after it was cached (TTL ${CACHE_TTL_MS} ms)`);
});

test("a key rotated away without grace is refused by another instance before its cached entry expires", async () => {
  const engineer = await signedIn(await createStaffAccount("engineer"));
  const { id, apiKey } = await newApiClient("rotated everywhere");
  const cachedAt = performance.now();
  assert.equal(await tryKey(apiKey, OTHER_URL), 400);
  const rotated = await engineer.mutate("apiClients.rotateKey", { clientId: id, graceHours: 0 });
  assert.equal(rotated.status, 200);
  const ms = await refusedAfterCachingMs(apiKey, cachedAt);
  assert.ok(ms < CACHE_TTL_MS, `refused ${ms.toFixed(0)} ms after it was cached (TTL ${CACHE_TTL_MS} ms)`);
  assert.equal(await tryKey(rotated.data.apiKey, OTHER_URL), 400, "the new key works there");
});
