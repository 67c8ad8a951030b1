import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import { abandonedResponse } from "~/server/charges/responses";
import { API_ERROR_CODES, API_ERRORS, isApiErrorCode } from "@charges/client/errorRegistry";
import { MAX_KEY_LENGTH } from "@charges/client/idempotencyProtocol";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { declinedRefundResponse } from "~/server/refunds/responses";
import {
  APP_URL,
  chargeBody,
  closeConnections,
  newApiClient,
  newCharge,
  postCharge,
  postRefund,
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

/** The headers an answer may carry beyond the standard ones: each one sent must be documented. */
const ANSWER_HEADERS = [
  "Retry-After",
  "Link",
  "Idempotent-Replay",
  "Idempotent-Replayed",
  "Original-Request",
  "Idempotency-Key",
  "Idempotency-Key-Expires",
  "Location",
  "Preference-Applied",
  "Request-Id",
];

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
  // One response per status holds several codes: Retry-After is owed by the codes that have it.
  const code = res.json?.error?.code ?? res.json?.code;
  if (isApiErrorCode(code) && "retryAfterSeconds" in API_ERRORS[code]) {
    assert.ok(documented.headers?.["Retry-After"], `${res.status} ${code}: Retry-After undocumented`);
    assert.ok(res.headers.get("Retry-After"), `${res.status} ${code} lacks Retry-After`);
  }
  for (const header of ANSWER_HEADERS) {
    if (res.headers.get(header)) assert.ok(documented.headers?.[header], `${res.status} sends ${header}, undocumented`);
  }
}

const problem = { Accept: "application/problem+json" };

describe("OpenAPI document: events, lists and webhook endpoints", () => {
  test("real answers of the lists, events and endpoints match the document", async () => {
    const get = async (path: string) => {
      const res = await fetch(`${APP_URL}${path}`, { headers: { Authorization: `Bearer ${apiKey}` } });
      const text = await res.text();
      return { status: res.status, headers: res.headers, json: JSON.parse(text), text } as ApiResponse;
    };
    const send = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${APP_URL}${path}`, {
        method,
        headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, json: JSON.parse(text), text } as ApiResponse;
    };
    const charge = await newCharge(apiKey);
    await postRefund({ apiKey, key: uniqueKey(), body: { charge, amount_cents: 100 } });
    conforms("/api/charges", "get", await get("/api/charges?limit=2"));
    conforms("/api/charges", "get", await get("/api/charges?limit=0"));
    conforms("/api/refunds", "get", await get(`/api/refunds?charge=${charge}`));
    const events = await get("/api/events?limit=3");
    conforms("/api/events", "get", events);
    conforms("/api/events", "get", await get("/api/events?type=nope"));
    conforms("/api/events/{id}", "get", await get(`/api/events/${events.json.data[0].id}`));
    conforms("/api/events/{id}", "get", await get("/api/events/evt_nope"));
    const made = await send("POST", "/api/webhook_endpoints", { url: "https://example.com/h", enabled_events: ["*"] });
    conforms("/api/webhook_endpoints", "post", made);
    conforms("/api/webhook_endpoints", "post", await send("POST", "/api/webhook_endpoints", { url: "ftp://x" }));
    conforms("/api/webhook_endpoints", "get", await get("/api/webhook_endpoints"));
    const one = `/api/webhook_endpoints/${made.json.id}`;
    conforms("/api/webhook_endpoints/{id}", "get", await get(one));
    conforms("/api/webhook_endpoints/{id}", "post", await send("POST", one, { disabled: true }));
    conforms(
      "/api/webhook_endpoints/{id}/rotate",
      "post",
      await send("POST", `${one}/rotate`, { overlap_seconds: 60 }),
    );
    conforms("/api/webhook_endpoints/{id}", "delete", await send("DELETE", one));
    conforms("/api/webhook_endpoints/{id}", "get", await get(one));
  });
});

describe("OpenAPI document", () => {
  test("documents every error code of the registry, with its status, in the reference and the schemas", () => {
    const description: string = doc.info.description;
    for (const code of API_ERROR_CODES.filter((c) => c !== "client_closed_request")) {
      assert.match(description, new RegExp(`^## ${code}$`, "m"), `${code} has its own entry`);
      assert.ok(description.includes(API_ERRORS[code].advice), `${code} says what a client should do`);
    }
    assert.deepEqual(doc.components.schemas.Error.properties.error.properties.code.enum, API_ERROR_CODES);
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(methods)) {
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          for (const [, code] of response.description.matchAll(/\[`(\w+)`\]/g)) {
            const where = `${method.toUpperCase()} ${path}: ${code} under ${status}`;
            assert.equal(String(API_ERRORS[code as keyof typeof API_ERRORS].status), status, where);
          }
        }
      }
    }
  });

  test("every body and parameter /docs shows has an example with real values, valid against its schema", () => {
    const valid = (schema: object, value: unknown, where: string) => {
      const validate = ajv.compile(schema);
      assert.ok(validate(value), `${where}: ${JSON.stringify(validate.errors)}`);
    };
    const examples = (media: { example?: unknown; examples?: Record<string, { value: unknown }> }) =>
      media.examples ? Object.values(media.examples).map((e) => e.value) : [media.example];
    const refs = (schema: any): object =>
      JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
    let checked = 0;
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(methods)) {
        const bodies = [
          ["request", operation.requestBody?.content ?? {}],
          ...Object.entries<any>(operation.responses).map(([status, r]) => [status, r.content ?? {}]),
        ];
        for (const [what, content] of bodies) {
          for (const [mediaType, media] of Object.entries<any>(content)) {
            const where = `${method.toUpperCase()} ${path} ${what} ${mediaType}`;
            const values = examples(media);
            assert.ok(values.length > 0 && values[0] !== undefined, `${where} has an example`);
            for (const value of values) valid(refs(media.schema), value, where);
            checked += values.length;
          }
        }
        for (const parameter of operation.parameters ?? []) {
          const where = `${method.toUpperCase()} ${path} ${parameter.name}`;
          assert.ok(parameter.schema.example !== undefined, `${where} has an example`);
          valid(parameter.schema, parameter.schema.example, where);
        }
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          for (const [name, header] of Object.entries<any>(response.headers ?? {}))
            assert.ok(header.schema.example ?? header.schema.enum, `${path} ${status} ${name} has an example`);
        }
      }
    }
    assert.ok(checked > 50, `${checked} examples`);
    // A wrong example is caught.
    assert.throws(() => valid(refs({ $ref: "#/components/schemas/Charge" }), { id: "string" }, "a placeholder"));
  });

  test("the key's limits: 1 to 64 characters, 130 in the header's quoted form with every character escaped", () => {
    for (const path of ["/api/charges", "/api/refunds"]) {
      const header = doc.paths[path].post.parameters.find((p: { name: string }) => p.name === "Idempotency-Key");
      assert.deepEqual([header.schema.minLength, header.schema.maxLength], [1, 2 * MAX_KEY_LENGTH + 2]);
      assert.match(header.description, new RegExp(`1 to ${MAX_KEY_LENGTH} printable ASCII`));
    }
  });

  test("each money route is generated from one description: POST, settling GET, GET by id, the same headers", () => {
    const codesOf = (responses: object) =>
      Object.values<any>(responses).flatMap((r) => [...r.description.matchAll(/\[`(\w+)`\]/g)].map((m) => m[1]));
    for (const [path, object] of [
      ["/api/charges", "Charge"],
      ["/api/refunds", "Refund"],
    ]) {
      const { post, get } = doc.paths[path!];
      assert.deepEqual(
        [post.operationId, get.operationId, doc.paths[`${path}/{id}`].get.operationId],
        [`create${object}`, `find${object}ByIdempotencyKey`, `get${object}`],
      );
      assert.deepEqual(
        post.parameters.map((p: { name: string }) => p.name),
        ["Idempotency-Key", "Prefer"],
      );
      assert.equal(post.requestBody.content["application/json"].schema.$ref, `#/components/schemas/Create${object}`);
      assert.deepEqual(Object.keys(post.responses["201"].headers).sort(), [
        "Idempotency-Key",
        "Idempotency-Key-Expires",
        "Idempotent-Replay",
        "Idempotent-Replayed",
        "Location",
        "Original-Request",
        "Preference-Applied",
        "Request-Id",
      ]);
      assert.deepEqual(get.parameters.map((p: { name: string }) => p.name).slice(0, 2), [
        "idempotency_key",
        "request_id",
      ]);
      // Without either: the list (GET /api/charges?customer=..., GET /api/refunds?charge=...).
      assert.deepEqual(get.parameters.map((p: { name: string }) => p.name).slice(3), [
        "limit",
        "starting_after",
        "ending_before",
        "created[gte]",
        "created[gt]",
        "created[lte]",
        "created[lt]",
      ]);
      assert.equal(get.responses["200"].content["application/json"].schema.$ref, `#/components/schemas/${object}List`);
      for (const code of ["idempotency_key_reused", "request_in_progress", "gateway_unavailable"]) {
        assert.ok(codesOf(post.responses).includes(code), `POST ${path} documents ${code}`);
      }
    }
    const refunds = doc.paths["/api/refunds"];
    const refundCodes = ["not_found", "charge_not_refundable", "charge_already_refunded", "refund_declined"];
    for (const code of [...refundCodes, "refund_outcome_unknown"])
      assert.ok(codesOf(refunds.post.responses).includes(code));
    assert.ok(codesOf(refunds.get.responses).includes("refund_declined"), "a stored answer, replayed by GET");
    assert.ok(!codesOf(refunds.get.responses).includes("charge_already_refunded"), "a refusal, never stored");
    assert.ok(!codesOf(doc.paths["/api/charges"].post.responses).includes("refund_declined"));
    assert.match(refunds.get.parameters[1].description, /502 `refund_outcome_unknown`/);
    assert.deepEqual(doc.components.schemas.Charge.properties.refunds.items, { $ref: "#/components/schemas/Refund" });
  });

  test("is OpenAPI 3.1 and describes the request body with the server's own schema", () => {
    assert.equal(doc.openapi, "3.1.0");
    assert.deepEqual(doc.components.schemas.CreateCharge.required.sort(), ["amount_cents", "card_token", "currency"]);
    const refund = doc.components.schemas.CreateRefund;
    assert.deepEqual(refund.required, ["charge"]);
    assert.deepEqual(refund.properties.reason.enum, ["duplicate", "requested_by_customer", "fraudulent"]);
    assert.equal(refund.additionalProperties, false, "unknown fields are rejected");
  });

  test("every outcome of POST /api/charges matches the document", async () => {
    const key = uniqueKey();
    const body = chargeBody();
    const slowKey = uniqueKey();
    // Slow enough to be in flight still when it is asked about on a loaded machine (1.5 s was not, at load 10).
    const slow = postCharge({ apiKey, key: slowKey, body: chargeBody({ card_token: "tok_slow_4000" }) });
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

  test("GET /api/charges/{id} matches the document, with its refunds", async () => {
    const created = await postCharge({ apiKey, key: uniqueKey() });
    const refunded = await newCharge(apiKey, { amount_cents: 1000 });
    for (const amount_cents of [300, 700])
      await postRefund({ apiKey, key: uniqueKey(), body: { charge: refunded, amount_cents } });
    for (const id of [created.json.id, refunded, "ch_missing"]) {
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
    // Slow enough to be in flight still when it is asked about on a loaded machine (1.5 s was not, at load 10).
    const slow = postCharge({ apiKey, key: slowKey, body: chargeBody({ card_token: "tok_slow_4000" }) });
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

describe("OpenAPI document: refunds", () => {
  type As = { key?: string; headers?: object };
  const getOn = async (path: string, { key: bearer = apiKey, headers = {} }: As = {}) => {
    const res = await fetch(`${APP_URL}${path}`, { headers: { Authorization: `Bearer ${bearer}`, ...headers } });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: JSON.parse(text) } as ApiResponse;
  };
  const summary = (responses: ApiResponse[]) =>
    responses.map((r) => `${r.status} ${r.json.error?.code ?? r.json.code ?? r.json.object}`);

  test("every outcome of POST /api/refunds matches the document", { timeout: 30_000 }, async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const declinedCharge = await postCharge({ apiKey, body: chargeBody({ card_token: "tok_declined" }) });
    const slowCharge = await newCharge(apiKey, { card_token: "tok_refund_slow_1500" });
    const failing = await newCharge(apiKey, { card_token: "tok_refund_error" });
    const failsAfterRefunding = await newCharge(apiKey, { card_token: "tok_refund_then_error" });
    const slowKey = uniqueKey();
    const slow = postRefund({ apiKey, key: slowKey, body: { charge: slowCharge } });
    await new Promise((r) => setTimeout(r, 300));
    // What the gateway's refusal leaves (the simulator never refuses a refund): a stored 402, replayed.
    const declined = { key: uniqueKey(), body: { charge, amount_cents: 5 } };
    const response = declinedRefundResponse("expired_or_canceled_card");
    await seedRecord({ apiClientId: clientId, phase: "complete", route: REFUNDS_ROUTE, response, ...declined });
    const key = uniqueKey();
    const body = { charge, amount_cents: 400, reason: "requested_by_customer" };
    const post = (b: unknown, k: string | undefined = uniqueKey(), headers = {}) =>
      postRefund({ apiKey, key: k, body: b, headers });
    const responses = [
      await post(body, key), // 201
      await post(body, key), // 201 replay
      await post({ ...body, amount_cents: 1 }, key), // 422
      await post({ charge: slowCharge }, slowKey), // 409 in flight
      await post({ charge: "ch_000000000000000000000000" }), // 404
      await post({ charge: declinedCharge.json.error.charge }), // 400 charge_not_refundable
      await post({ charge, amount_cents: 601 }), // 400, the amount over what is left
      await post({ charge, amount_cents: 601 }, uniqueKey(), problem), // 400 problem+json
      await post(declined.body, declined.key), // 402 replay
      await post({ charge: failing }), // 503
      await postRefund({ apiKey, body: { charge: failsAfterRefunding } }), // 502 (keyless)
      await postRefund({ apiKey, key: uniqueKey(), rawBody: "{" }), // 400 invalid_json
      await postRefund({ key: uniqueKey(), body }), // 401
    ];
    await post({ charge }); // the rest
    responses.push(await post({ charge })); // 400 charge_already_refunded
    await slow;
    assert.deepEqual(summary(responses), [
      "201 refund",
      "201 refund",
      "422 idempotency_key_reused",
      "409 request_in_progress",
      "404 not_found",
      "400 charge_not_refundable",
      "400 invalid_request",
      "400 invalid_request",
      "402 refund_declined",
      "503 gateway_unavailable",
      "502 refund_outcome_unknown",
      "400 invalid_json",
      "401 unauthorized",
      "400 charge_already_refunded",
    ]);
    const [fresh, replay] = responses;
    assert.equal(fresh!.headers.get("location"), `/api/refunds/${fresh!.json.id}`);
    assert.ok(fresh!.headers.get("idempotency-key-expires"));
    assert.equal(replay!.headers.get("idempotent-replay"), "true");
    assert.equal(replay!.headers.get("original-request"), fresh!.headers.get("request-id"));
    assert.equal(responses[8]!.headers.get("idempotent-replay"), "true");
    for (const res of responses) conforms("/api/refunds", "post", res);
  });

  test("GET /api/refunds/{id} and GET /api/refunds?idempotency_key=K (or request_id) match the document", {
    timeout: 30_000,
  }, async () => {
    const charge = await newCharge(apiKey, { amount_cents: 1000 });
    const made = { key: uniqueKey(), body: { charge, amount_cents: 100 } };
    const refund = await postRefund({ apiKey, ...made });
    // A refund the gateway declined: its stored 402, replayed to the settling GET.
    const declined = await seedRecord({
      apiClientId: clientId,
      phase: "complete",
      route: REFUNDS_ROUTE,
      body: { charge, amount_cents: 950 },
      response: declinedRefundResponse("insufficient_funds"),
    });
    const slowKey = uniqueKey();
    const slow = postRefund({
      apiKey,
      key: slowKey,
      // Slow enough to be still in flight when it is asked for below.
      body: { charge: await newCharge(apiKey, { card_token: "tok_refund_slow_4000" }) },
    });
    await new Promise((r) => setTimeout(r, 300));
    const keyless = await postRefund({
      apiKey,
      body: { charge: await newCharge(apiKey, { card_token: "tok_refund_then_error" }) },
    });
    const other = await newApiClient("openapi refunds other");
    const settle = (query: string, as?: As) => getOn(`/api/refunds?${query}`, as);

    const byId = [
      await getOn(`/api/refunds/${refund.json.id}`),
      await getOn(`/api/refunds/${refund.json.id}`, { key: other.apiKey }),
      await getOn("/api/refunds/re_missing"),
    ];
    assert.deepEqual(summary(byId), ["200 refund", "404 not_found", "404 not_found"]);
    for (const res of byId) conforms("/api/refunds/{id}", "get", res);

    const settled = [
      await settle(`idempotency_key=${made.key}`), // 201, as a replay
      await settle(`idempotency_key=${declined.idempotencyKey}`), // 402 refund_declined, as a replay
      await settle(`idempotency_key=${slowKey}`), // 409 in flight
      await settle(`request_id=${keyless.json.error.request_id}`), // 201: the GET settles it with the gateway
      await settle(`idempotency_key=${uniqueKey()}`), // 404
      await settle(`idempotency_key=${made.key}`, { key: other.apiKey }), // 404: another client's key
      await settle(`idempotency_key=${"x".repeat(65)}`), // 400
      await settle(`idempotency_key=${made.key}`, { key: "sk_test_wrong" }), // 401
    ];
    await slow;
    assert.deepEqual(summary(settled), [
      "201 refund",
      "402 refund_declined",
      "409 request_in_progress",
      "201 refund",
      "404 not_found",
      "404 not_found",
      "400 invalid_idempotency_key",
      "401 unauthorized",
    ]);
    assert.deepEqual(settled[0]!.json, refund.json);
    assert.equal(settled[1]!.headers.get("idempotent-replay"), "true");
    for (const res of [...byId, ...settled]) assert.ok(res.headers.get("request-id"), `${res.status}: a Request-Id`);
    for (const res of settled) conforms("/api/refunds", "get", res);
  });
});
