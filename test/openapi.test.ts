import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import { APP_URL, chargeBody, closeConnections, newApiClient, postCharge, uniqueKey, type ApiResponse } from "./helpers";

let apiKey: string;
let doc: any;
let ajv: Ajv2020;
before(async () => {
  ({ apiKey } = await newApiClient("openapi"));
  doc = await (await fetch(`${APP_URL}/api/openapi.json`)).json();
  ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema({ $id: "doc", components: doc.components });
});
after(closeConnections);

/** Checks a real response against what the document says for its path and status. */
function conforms(path: string, method: string, res: ApiResponse) {
  const documented = doc.paths[path][method].responses[String(res.status)];
  assert.ok(documented, `${method.toUpperCase()} ${path} answered ${res.status}, which the document does not list`);
  const ref: string = documented.content["application/json"].schema.$ref;
  const validate = ajv.getSchema(`doc${ref}`)!;
  assert.ok(validate(res.json), `${res.status} body does not match ${ref}: ${JSON.stringify(validate.errors)}\n${res.text}`);
  for (const header of Object.keys(documented.headers ?? {})) {
    if (header === "Retry-After") assert.ok(res.headers.get(header), `${res.status} lacks ${header}`);
  }
}

describe("OpenAPI document", () => {
  test("is OpenAPI 3.1 and describes the request body with the server's own schema", () => {
    assert.equal(doc.openapi, "3.1.0");
    assert.deepEqual(doc.components.schemas.CreateCharge.required.sort(), ["amount_cents", "card_token", "currency"]);
  });

  test("every outcome of POST /api/charges matches the document", async () => {
    const key = uniqueKey();
    const body = chargeBody();
    const slowKey = uniqueKey();
    const slow = postCharge({ apiKey, key: slowKey, body: chargeBody({ card_token: "tok_slow_1500" }) });
    await new Promise((r) => setTimeout(r, 300));
    const responses = [
      await postCharge({ apiKey, key, body }), // 201
      await postCharge({ apiKey, key, body }), // 201 replay
      await postCharge({ apiKey, key, body: { ...body, amount_cents: 1 } }), // 422
      await postCharge({ apiKey, key: slowKey, body: chargeBody({ card_token: "tok_slow_1500" }) }), // 409 (different customer: 422 would also do)
      await postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) }), // 402
      await postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ card_token: "tok_error" }) }), // 503
      await postCharge({ apiKey, key: uniqueKey(), body: { amount_cents: 0 } }), // 400
      await postCharge({ apiKey, key: "x".repeat(65) }), // 400
      await postCharge({ key: uniqueKey() }), // 401
      await postCharge({ apiKey, key: uniqueKey(), rawBody: "x".repeat(20_000) }), // 413
      await postCharge({ apiKey, key: uniqueKey(), rawBody: "a=1", headers: { "Content-Type": "text/plain" } }), // 415
    ];
    await slow;
    const statuses = new Set(responses.map((r) => r.status));
    for (const status of [201, 400, 401, 402, 413, 415, 422, 503]) assert.ok(statuses.has(status), `saw ${status}`);
    for (const res of responses) conforms("/api/charges", "post", res);
  });

  test("GET /api/charges/{id} matches the document", async () => {
    const created = await postCharge({ apiKey, key: uniqueKey() });
    for (const id of [created.json.id, "ch_missing"]) {
      const res = await fetch(`${APP_URL}/api/charges/${id}`, { headers: { Authorization: `Bearer ${apiKey}` } });
      const text = await res.text();
      conforms("/api/charges/{id}", "get", { status: res.status, headers: res.headers, text, json: JSON.parse(text) });
    }
  });
});
