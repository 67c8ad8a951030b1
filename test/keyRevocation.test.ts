/**
 * A key revoked (or rotated away) through one app instance stops working in
 * the others within a second, although each caches keys for
 * API_KEY_CACHE_TTL_MS (30 s here): the change is announced through the
 * database and every instance polls for it (src/server/auth/keyRevocations.ts).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { APP_URL, closeConnections, db, newApiClient, postCharge, startAppInstance, uniqueKey } from "./helpers";
import { createStaffAccount, signedIn } from "./staffHttp";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 8;
const OTHER_URL = `http://127.0.0.1:${PORT}`;
let other: Awaited<ReturnType<typeof startAppInstance>>;

before(async () => {
  other = await startAppInstance(PORT, { API_KEY_CACHE_TTL_MS: "30000" });
});
after(async () => {
  await other?.stop();
  await closeConnections();
});

/** A POST that authenticates but charges nothing (its body is invalid): 400 if the key is accepted, 401 if not. */
const tryKey = (apiKey: string, baseUrl: string) =>
  postCharge({ apiKey, baseUrl, key: uniqueKey("auth"), body: { amount_cents: -1 } }).then((r) => r.status);

/** How long after now the other instance first refuses the key (polled every 50 ms, for up to 5 s). */
async function refusedAfterMs(apiKey: string): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < 5_000) {
    if ((await tryKey(apiKey, OTHER_URL)) === 401) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 50));
  }
  return Number.POSITIVE_INFINITY;
}

test("a key revoked through one instance is refused by another within 1 s", async () => {
  const engineer = await signedIn(await createStaffAccount("engineer"));
  const { id, apiKey } = await newApiClient("revoked everywhere");
  assert.equal(await tryKey(apiKey, OTHER_URL), 400, "the other instance has it cached");
  assert.equal(await tryKey(apiKey, APP_URL), 400);
  const key = await db.apiKey.findFirstOrThrow({ where: { apiClientId: id } });
  assert.equal((await engineer.mutate("apiClients.revokeKey", { keyId: key.id })).status, 200);
  const ms = await refusedAfterMs(apiKey);
  assert.ok(ms < 1_000, `refused after ${ms.toFixed(0)} ms`);
});

test("a key rotated away without grace is refused by another instance within 1 s", async () => {
  const engineer = await signedIn(await createStaffAccount("engineer"));
  const { id, apiKey } = await newApiClient("rotated everywhere");
  assert.equal(await tryKey(apiKey, OTHER_URL), 400);
  const rotated = await engineer.mutate("apiClients.rotateKey", { clientId: id, graceHours: 0 });
  assert.equal(rotated.status, 200);
  const ms = await refusedAfterMs(apiKey);
  assert.ok(ms < 1_000, `refused after ${ms.toFixed(0)} ms`);
  assert.equal(await tryKey(rotated.data.apiKey, OTHER_URL), 400, "the new key works there");
});
