import assert from "node:assert/strict";
import { test } from "node:test";
import { deriveGatewayKey } from "~/server/gateway/deriveGatewayKey";

/**
 * Pinned to fixed values: every retry of an operation in flight across a deploy
 * must reach the gateway under the key its first attempt used. A change here
 * would charge each of those operations a second time.
 */
test("the derived gateway key of a record is pinned", () => {
  const record = {
    route: "POST /api/charges",
    apiClientId: 7,
    idempotencyKey: "8e03978e-40d5-43e8-bc93-6894a57f9324",
    id: 12345n,
  };
  assert.equal(deriveGatewayKey(record), "gk_dcef1ca09796792254469cc5977b394de79a9d908cbb35d98556e1a76bf986de");
  assert.equal(
    deriveGatewayKey({ ...record, idempotencyKey: null }),
    "gk_e6ba43ddbb8b85576d33f45e3a9711358f8886b67ba92a033d821df906ce388c",
  );
});

test("it differs by route, client, key and record", () => {
  const record = { route: "POST /api/charges", apiClientId: 7, idempotencyKey: "k", id: 1n };
  const keys = new Set([
    deriveGatewayKey(record),
    deriveGatewayKey({ ...record, route: "POST /api/refunds" }),
    deriveGatewayKey({ ...record, apiClientId: 8 }),
    deriveGatewayKey({ ...record, idempotencyKey: "K" }),
    deriveGatewayKey({ ...record, id: 2n }),
  ]);
  assert.equal(keys.size, 5);
});
