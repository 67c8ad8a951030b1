import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import { abandonedResponse } from "~/server/charges/responses";
import { API_ERROR_CODES, API_ERRORS } from "~/server/http/errorRegistry";
import {
  APP_URL,
  chargeBody,
  closeConnections,
  newApiClient,
  postCharge,
  seedRecord,
  uniqueKey,
  type ApiResponse,
} from "./helpers";

let apiKey: string;
let clientId: number;
let doc: any;
let ajv: Ajv2020;
before(async () => {
  ({ apiKey, id: clientId } = await newApiClient("openapi"));
  doc = await (await fetch(`${APP_URL}/api/openapi.json`)).json();
  ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema({ $id: "doc", components: doc.components });
});
after(closeConnections);

/** Checks a real response against what the document says for its path and status. */
function conforms(path: string, method: string, res: ApiResponse) {
  const documented = doc.paths[path][method].responses[String(res.status)];
  assert.ok(documented, `${method.toUpperCase()} ${path} answered ${res.status}, which the document does not list`);
  const mediaType = res.headers.get("content-type")!.split(";")[0]!;
  assert.ok(documented.content[mediaType], `${res.status} answered ${mediaType}, which the document does not list`);
  const ref: string = documented.content[mediaType].schema.$ref;
  const validate = ajv.getSchema(`doc${ref}`)!;
  assert.ok(
    validate(res.json),
    `${res.status} body does not match ${ref}: ${JSON.stringify(validate.errors)}\n${res.text}`,
  );
  for (const header of Object.keys(documented.headers ?? {})) {
    if (header === "Retry-After") assert.ok(res.headers.get(header), `${res.status} lacks ${header}`);
  }
  for (const header of ["Retry-After", "Link", "Idempotent-Replay", "Idempotent-Replayed"]) {
    if (res.headers.get(header)) assert.ok(documented.headers?.[header], `${res.status} sends ${header}, undocumented`);
  }
}

const problem = { Accept: "application/problem+json" };

describe("OpenAPI document", () => {
  test("documents every error code of the registry, with its status, in the reference and the schemas", () => {
    const description: string = doc.info.description;
    for (const code of API_ERROR_CODES.filter((c) => c !== "client_closed_request")) {
      assert.match(description, new RegExp(`^## ${code}$`, "m"), `${code} has its own entry`);
      assert.ok(description.includes(API_ERRORS[code].advice), `${code} says what a client should do`);
    }
    assert.deepEqual(doc.components.schemas.Error.properties.error.properties.code.enum, API_ERROR_CODES);
    for (const [status, response] of Object.entries<any>(doc.paths["/api/charges"].post.responses)) {
      for (const [, code] of response.description.matchAll(/\[`(\w+)`\]/g)) {
        assert.equal(String(API_ERRORS[code as keyof typeof API_ERRORS].status), status, `${code} under ${status}`);
      }
    }
  });

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
      // 409 (different customer: 422 would also do)
      await postCharge({ apiKey, key: slowKey, body: chargeBody({ card_token: "tok_slow_1500" }) }),
      await postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) }), // 402
      await postCharge({ apiKey, key: uniqueKey(), body: chargeBody({ card_token: "tok_error" }) }), // 503
      await postCharge({ apiKey, key: uniqueKey(), body: { amount_cents: 0 } }), // 400
      await postCharge({ apiKey, key: "x".repeat(65) }), // 400
      await postCharge({ key: uniqueKey() }), // 401
      await postCharge({ apiKey, key: uniqueKey(), rawBody: "x".repeat(20_000) }), // 413
      await postCharge({ apiKey, key: uniqueKey(), rawBody: "a=1", headers: { "Content-Type": "text/plain" } }), // 415
      await postCharge({ apiKey, key: uniqueKey(), body: { amount_cents: 0 }, headers: problem }), // 400 problem+json
      await postCharge({ apiKey, key: "x".repeat(65), headers: problem }), // 400 problem+json, with Link
    ];
    const declined = { key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) };
    await postCharge({ apiKey, ...declined });
    responses.push(
      await postCharge({ apiKey, ...declined }),
      await postCharge({ apiKey, ...declined, headers: problem }),
    ); // 402 replays
    await slow;
    assert.ok(responses.some((r) => r.headers.get("content-type")?.startsWith("application/problem+json")));
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
  test("GET /api/charges?idempotency_key=K matches the document: stored answers, in flight, unknown", async () => {
    type As = { key?: string; headers?: object };
    const get = async (key: string, { key: bearer = apiKey, headers = {} }: As = {}) => {
      const url = `${APP_URL}/api/charges?idempotency_key=${encodeURIComponent(key)}`;
      const res = await fetch(url, { headers: { Authorization: `Bearer ${bearer}`, ...headers } });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, json: JSON.parse(text) } as ApiResponse;
    };
    const charged = { key: uniqueKey(), body: chargeBody() };
    await postCharge({ apiKey, ...charged });
    const declined = { key: uniqueKey(), body: chargeBody({ card_token: "tok_declined" }) };
    await postCharge({ apiKey, ...declined });
    const response = abandonedResponse({ kind: "refused", code: "request_expired" });
    const written = { phase: "complete", finishedBy: "abandoned", response } as const;
    const abandoned = await seedRecord({ apiClientId: clientId, ...written }); // what the sweeper stores
    const slowKey = uniqueKey();
    const slow = postCharge({ apiKey, key: slowKey, body: chargeBody({ card_token: "tok_slow_1500" }) });
    await new Promise((r) => setTimeout(r, 300));
    const other = await newApiClient("openapi other");

    const complete = await get(charged.key);
    const responses = [
      complete, // 201, as a replay
      await get(declined.key), // 402, as a replay
      await get(declined.key, { headers: problem }), // 402 replay: the stored JSON, whatever Accept says
      await get(abandoned.idempotencyKey!), // 500 request_abandoned, as a replay
      await get(slowKey), // 409 in flight
      await get(slowKey, { headers: problem }), // 409 as RFC 9457
      await get(uniqueKey()), // 404 unknown
      await get(charged.key, { key: other.apiKey }), // 404: another client's key
      await get("x".repeat(65)), // 400 invalid_idempotency_key
      await get(uniqueKey(), { key: "sk_test_wrong" }), // 401
    ];
    await slow;
    assert.equal(complete.headers.get("idempotent-replay"), "true");
    assert.deepEqual(
      responses.map((r) => `${r.status} ${r.json.error?.code ?? r.json.code ?? r.json.object}`),
      [
        "201 charge",
        "402 card_declined",
        "402 card_declined",
        "500 request_abandoned",
        "409 request_in_progress",
        "409 request_in_progress",
        "404 not_found",
        "404 not_found",
        "400 invalid_idempotency_key",
        "401 unauthorized",
      ],
    );
    for (const res of responses) conforms("/api/charges", "get", res);
  });
});
