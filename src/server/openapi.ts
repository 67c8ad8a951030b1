import { eventPaths, eventSchemas, listExamples, listParameters } from "./openapiEvents";
import { API_ERROR_CODES, API_ERRORS, type ApiErrorCode, docAnchor } from "@charges/client/errorRegistry";
import { MAX_KEY_LENGTH } from "@charges/client/idempotencyProtocol";
import { z } from "zod";
import { TEST_CARDS } from "~/gateway-sim/testCards";
import { MONEY_OPERATIONS } from "~/server/moneyRoutes";
import { codeSamples, errorExample, HEALTH_SAMPLES, problemExample, SAMPLE } from "~/server/openapiExamples";
import { REFUND_REASONS } from "~/server/refunds/schema";

/*
 * The OpenAPI 3.1 description of the public API, served at /api/openapi.json and
 * rendered at /docs. Every error status, header and explanation is derived from
 * the error registry. Each money route describes itself (its MoneyOperation's `doc`, in its domain module);
 * its POST, its settling GET and its GET by id are generated from that (moneyPaths).
 */

const ACTION_TEXT = {
  retry: "Retry with the same key (`retryable: true`)",
  fix: "Fix the request (`retryable: false`)",
  final: "Final (`retryable: false`)",
} as const;

const RETRYABLE_DOC = {
  type: "boolean",
  description:
    "From the error registry: true when the SAME key and body may be sent again later (after `Retry-After`) for " +
    "another answer; false when resending changes nothing (fix the request, or the answer is final). Read this, " +
    "not the status: 500 is both `internal_error` (retryable) and a replayed `request_abandoned` (final).",
} as const;

const cell = (text: string) => text.replaceAll("|", "\\|");

/** Every code at a glance: what an integrator's retry logic needs. */
function errorSummary(codes: ApiErrorCode[]): string {
  const rows = codes.map((code) => {
    const spec = API_ERRORS[code] as (typeof API_ERRORS)[ApiErrorCode] & { retryAfterSeconds?: number };
    const retryAfter = spec.retryAfterSeconds ? `\`${spec.retryAfterSeconds}\`` : "";
    const action = { retry: "retry, same key and body", fix: "fix the request", final: "final" }[spec.action];
    const link = `[\`${code}\`](#${docAnchor(code)})`;
    return `| ${link} | ${spec.status} | \`${spec.action === "retry"}\` | ${retryAfter} | ${action} |`;
  });
  return ["| Code | HTTP | `retryable` | `Retry-After` | Client |", "|---|---|---|---|---|", ...rows].join("\n");
}

const STRIPE_TEXT = { "test mode": "yes, and in Stripe's test mode", simulator: "yes (the simulator)", false: "no" };

/** The simulated gateway's cards (src/gateway-sim/testCards.ts). */
function testCardTable(): string {
  const rows = TEST_CARDS.map((card) => {
    const answer = `${card.answer.status}${card.answer.code ? ` \`${card.answer.code}\`` : ""}`;
    const token = card.token.startsWith("tok_") ? `\`${card.token}\`` : card.token;
    const stripe = STRIPE_TEXT[String(card.stripe) as keyof typeof STRIPE_TEXT];
    return `| ${token} | ${cell(card.does)} | ${answer} | ${stripe} |`;
  });
  return [
    "| `card_token` | What it does | First answer | Through `GATEWAY=stripe` |",
    "|---|---|---|---|",
    ...rows,
  ].join("\n");
}

/** Markdown for one code: its `## code` heading is the anchor doc_url points at (docAnchor). */
function errorSection(code: ApiErrorCode): string {
  const spec = API_ERRORS[code] as (typeof API_ERRORS)[ApiErrorCode] & { retryAfterSeconds?: number; stored?: boolean };
  const facts = [
    `HTTP ${spec.status}`,
    ACTION_TEXT[spec.action],
    spec.retryAfterSeconds ? `\`Retry-After: ${spec.retryAfterSeconds}\`` : "",
    spec.stored ? "stored and replayed" : "",
  ].filter(Boolean);
  return `## ${code}\n\n**${spec.title}**: ${facts.join(" · ")}\n\n${spec.advice}\n`;
}

/** Codes a client can get (client_closed_request is only ever in the server's logs). */
const DOCUMENTED_CODES = API_ERROR_CODES.filter((code) => code !== "client_closed_request");

const description = `
Idempotent payments. A retry of a request never charges twice, because each logical operation carries one
\`Idempotency-Key\` (draft-ietf-httpapi-idempotency-key-header), generated once and reused on every retry.

# Idempotency

- **Keys.** Generate a UUIDv4 per operation (a charge for an order), store it with the operation and send it on
  every attempt. Keys are unique across all API clients: an order number or a counter is not a key (two clients
  using \`order-1001\` collide, and the second gets 422 \`idempotency_key_reused\`). 1 to ${MAX_KEY_LENGTH}
  printable ASCII characters.
- **Header forms.** The draft's structured-field string, \`Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"\`
  (escapes decoded), or the bare form Stripe's clients send, \`Idempotency-Key: 8e03978e-...\`: the same key. Send
  one field line: two lines, a list or an unbalanced quote is 400 \`invalid_idempotency_key\`.
- **Replays.** A retry of a finished operation (same key, same body in any key order) gets the stored status and
  body with \`Idempotent-Replay: true\` and \`Idempotent-Replayed: true\`, successes and final errors alike;
  \`Original-Request\` names the \`Request-Id\` of the request that produced it (every answer has a \`Request-Id\`).
- **In flight.** A retry while the first request runs gets 409 \`request_in_progress\` with \`Retry-After\`. A
  client may send \`Prefer: wait=N\` (RFC 7240) to let the server wait up to N seconds for the outcome; a server
  that did so says \`Preference-Applied: wait=N\`.
- **Scope.** A key names one operation on one route: the same key on \`/api/charges\` and on \`/api/refunds\`
  names two independent operations.
- **Settling without resending.** A \`GET\` on the operation's route with its key
  (\`GET /api/charges?idempotency_key=K\`, \`GET /api/refunds?idempotency_key=K\`) answers what a replay would
  (complete), 409 with \`age_seconds\` (in flight) or 404 (unknown, expired, or another client's key).
- **Finality.** Every operation ends with a true, final answer in bounded time, whatever the client does. "No
  charge (refund) was made" (500 \`request_abandoned\`, \`retryable: false\`, replayed) is said only once nothing can
  still be made: an operation whose gateway never answers is final within \`REAP_AFTER_MS\` + \`GATEWAY_TIMEOUT_MS\` +
  10 s of its first attempt (about 1 min 20 s by default; through Stripe, which cannot be told a deadline,
  \`REAP_AFTER_MS\` + \`STRIPE_SEARCH_CONSISTENCY_MS\`, about 1 h). Neither retries nor lookups postpone it.
- **Expiry.** Keys and their stored answers are kept 24 hours; after that a request with the same key is a new
  operation. Answers under a key (stored ones, and 409 in flight) say when, in \`Idempotency-Key-Expires\`.
- **Errors** carry \`retryable\` (true: send the same key and body again after \`Retry-After\`; false: resending
  changes nothing) and \`doc_url\` (the entry below). Only "in flight, retry later" is 409; final refusals are
  4xx other than 409, and the one final 500 (\`request_abandoned\`, replayed) says \`retryable: false\`. Send
  \`Accept: application/problem+json\` for RFC 9457 problem details (\`type\`, \`title\`, \`status\`, \`detail\`,
  plus \`code\` and \`retryable\`); the default is \`{"error": {"code", "message", "retryable", "doc_url", ...}}\`.

# Test cards

The simulated gateway (what \`npm start\` and the tests run) takes these as \`card_token\`. The first answer is what a
charge with the card gets; the refund cards shape the refunds of the charge made with them. With a real Stripe test
key only \`tok_visa\`, \`tok_mastercard\`, \`tok_amex\`, \`tok_declined\` and \`tok_insufficient_funds\` exist.

${testCardTable()}

# Errors

Every error code, and what a client should do about it. Retry only what says \`retryable: true\` (409 and 503, with
\`Retry-After\`, and 500 \`internal_error\`), with the same key and body; everything else is final or needs a
changed request.

${errorSummary(DOCUMENTED_CODES)}

${DOCUMENTED_CODES.map(errorSection).join("\n")}
`;

const content = (schema: object, example?: object) => ({ "application/json": { schema, ...(example && { example }) } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const headerDocs = {
  "Retry-After": {
    description: "Seconds to wait before retrying with the same key",
    schema: { type: "string", example: "2" },
  },
  Link: {
    description: 'The documentation of the error, `<...>; rel="describedby"`',
    schema: {
      type: "string",
      example: `<${SAMPLE.baseUrl}/docs#section/Errors/request_in_progress>; rel="describedby"; type="text/html"`,
    },
  },
  "Idempotent-Replay": {
    description: "`true` on a replayed (stored) answer",
    schema: { type: "string", enum: ["true"] },
  },
  "Idempotent-Replayed": {
    description: "Stripe's name for Idempotent-Replay",
    schema: { type: "string", enum: ["true"] },
  },
  "Preference-Applied": {
    description: "`wait=N` when the server waited for the outcome",
    schema: { type: "string", example: "wait=5" },
  },
  "Request-Id": {
    description: "This answer's id, also on the server's log lines: quote it when reporting a problem",
    schema: { type: "string", example: SAMPLE.requestId },
  },
  "Idempotency-Key-Expires": {
    description: "An answer under a key: when the key stops naming this operation (an HTTP-date)",
    schema: { type: "string", example: SAMPLE.expires },
  },
  Location: { description: "The created object", schema: { type: "string" } },
  "Original-Request": {
    description: "On a replay: the `Request-Id` of the request whose answer is replayed",
    schema: { type: "string", example: SAMPLE.originalRequestId },
  },
  "Idempotency-Key": {
    description: "On a replay: the key the answer is stored under",
    schema: { type: "string", example: SAMPLE.key },
  },
};
const replayHeaders = {
  "Idempotent-Replay": headerDocs["Idempotent-Replay"],
  "Idempotent-Replayed": headerDocs["Idempotent-Replayed"],
};
/** A replay of a POST also names the request it replays and the key it answers. */
const postReplayHeaders = {
  ...replayHeaders,
  "Original-Request": headerDocs["Original-Request"],
  "Idempotency-Key": headerDocs["Idempotency-Key"],
};
const keyExpires = { "Idempotency-Key-Expires": headerDocs["Idempotency-Key-Expires"] };

type HeaderDocs = Record<string, object>;

/** One named example per code (Redoc offers them in a list), as the server answers it. */
const examplesOf = (codes: ApiErrorCode[], example: (code: ApiErrorCode) => object) =>
  Object.fromEntries(codes.map((code) => [code, { summary: API_ERRORS[code].title, value: example(code) }]));

/**
 * The documented error responses of an operation, grouped by status, from the registry. `all` go with every
 * answer; `replayed` with a stored code's (replayed) answer; `keyed` with an answer stored or in flight under a key.
 */
function errorResponses(
  codes: ApiErrorCode[],
  {
    all = {},
    replayed = replayHeaders,
    keyed = {},
  }: { all?: HeaderDocs; replayed?: HeaderDocs; keyed?: HeaderDocs } = {},
) {
  const byStatus = new Map<number, ApiErrorCode[]>();
  for (const code of codes)
    byStatus.set(API_ERRORS[code].status, [...(byStatus.get(API_ERRORS[code].status) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, group]) => {
      const specs = group.map(
        (code) => API_ERRORS[code] as { retryAfterSeconds?: number; idempotency?: boolean; stored?: boolean },
      );
      const headers: HeaderDocs = { ...all };
      if (specs.some((s) => s.retryAfterSeconds)) headers["Retry-After"] = headerDocs["Retry-After"];
      if (specs.some((s) => s.idempotency)) headers.Link = headerDocs.Link;
      if (specs.some((s) => s.stored)) Object.assign(headers, replayed, keyed);
      if (group.includes("request_in_progress")) Object.assign(headers, keyed);
      const list = group.map((code) => `[\`${code}\`](#${docAnchor(code)})`).join(", ");
      return [
        String(status),
        {
          description: `${list}: ${group.map((code) => API_ERRORS[code].message).join(" / ")}`,
          ...(Object.keys(headers).length ? { headers } : {}),
          content: {
            "application/json": { schema: ref("Error"), examples: examplesOf(group, errorExample) },
            "application/problem+json": { schema: ref("Problem"), examples: examplesOf(group, problemExample) },
          },
        },
      ];
    }),
  );
}

const keyHeader = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    `One per logical operation (a UUIDv4), reused on every retry. The key: 1 to ${MAX_KEY_LENGTH} printable ASCII ` +
    'characters, sent bare or as a structured-field string in quotes (then `\\` and `"` are escaped, so the field ' +
    `may reach ${2 * MAX_KEY_LENGTH + 2}). Required once the rollout mode is \`required\`.`,
  // The field value: quotes and escapes around the key make it longer than the key itself.
  schema: { type: "string", minLength: 1, maxLength: 2 * MAX_KEY_LENGTH + 2, example: SAMPLE.key },
};
const preferHeader = {
  name: "Prefer",
  in: "header",
  required: false,
  description:
    "`wait=N` (RFC 7240): on a retry that finds the operation in flight, wait up to N seconds for its outcome.",
  schema: { type: "string", example: "wait=5" },
};

/** What every money route's POST can answer, whatever it does: the idempotency protocol's and the HTTP layer's. */
const PROTOCOL_ERRORS: ApiErrorCode[] = [
  "invalid_request",
  "invalid_json",
  "invalid_idempotency_key",
  "idempotency_key_required",
  "unauthorized",
  "request_in_progress",
  "body_too_large",
  "unsupported_media_type",
  "request_timeout",
  "idempotency_key_reused",
  "internal_error",
  "request_abandoned",
  "gateway_unavailable",
  "service_unavailable",
];

/** What a settling GET can answer besides the stored answers of its route's operations. */
const SETTLE_ERRORS: ApiErrorCode[] = [
  "invalid_idempotency_key",
  "unauthorized",
  "not_found",
  "request_in_progress",
  "request_abandoned",
  "service_unavailable",
];

/** A money route as the API reference describes it: its own doc, its path, its body, its unknown outcome. */
type MoneyRouteDoc = (typeof MONEY_OPERATIONS)[number]["doc"] & {
  path: string;
  request: z.ZodType;
  unknownOutcome: ApiErrorCode;
};

const MONEY_ROUTES: MoneyRouteDoc[] = MONEY_OPERATIONS.map((operation) => ({
  ...operation.doc,
  path: operation.route.replace(/^POST /, ""),
  request: operation.schema,
  unknownOutcome: operation.unknownOutcome,
}));

const isStored = (code: ApiErrorCode) => (API_ERRORS[code] as { stored?: boolean }).stored === true;

/** POST and GET (settle) on the route's path, and GET on `<path>/{id}`. */
function moneyPaths(route: MoneyRouteDoc) {
  const { path, object, examples, summary, description, created, errors, unknownOutcome } = route;
  const noun = object.toLowerCase();
  const samples = codeSamples(route);
  const location = { ...headerDocs.Location, schema: { type: "string", example: `${path}/${examples.created.id}` } };
  const preferApplied = { "Preference-Applied": headerDocs["Preference-Applied"] };
  const unknown = `${API_ERRORS[unknownOutcome].status} \`${unknownOutcome}\``;
  const create = {
    operationId: `create${object}`,
    "x-codeSamples": samples.create,
    summary,
    description,
    parameters: [keyHeader, preferHeader],
    requestBody: { required: true, content: content(ref(`Create${object}`), examples.request) },
    responses: {
      "201": {
        description: `${created} A replay of a finished request carries \`Idempotent-Replay: true\`.`,
        headers: { Location: location, ...keyExpires, ...postReplayHeaders, ...preferApplied },
        content: content(ref(object), examples.created),
      },
      ...errorResponses([...PROTOCOL_ERRORS, ...errors], {
        all: preferApplied,
        replayed: postReplayHeaders,
        keyed: keyExpires,
      }),
    },
  };
  const list = LIST_FILTERS[object as keyof typeof LIST_FILTERS];
  const listSamples = [
    {
      ...samples.find[0]!,
      source: `${samples.find[0]!.source.split("\n")[0]}\ncurl -s "$API${path}?limit=10" ${AUTH}`,
    },
    {
      ...samples.find[1]!,
      source:
        `${samples.find[1]!.source.split("const found")[0]}` +
        `const page = await client.${path.split("/").pop()}.list({ limit: 10 });\n` +
        "console.log(page.data.map((o) => o.id), page.has_more);",
    },
  ];
  const settle = {
    operationId: `find${object}ByIdempotencyKey`,
    "x-codeSamples": [...samples.find, ...listSamples],
    summary: `Settle a ${noun} by its Idempotency-Key, or list your ${noun}s`,
    description:
      `Without \`idempotency_key\` or \`request_id\`: your ${noun}s, newest first, a page at a time (200, a list; ` +
      `the parameters below \`request_id\`). With one of them: ` +
      "for a client whose deadline ran out: what happened to the operation, without resending its body. " +
      "Complete: the stored status and body, exactly as a replay of the POST (`Idempotent-Replay: true`). " +
      "In flight: 409 `request_in_progress` with `age_seconds`. Unknown, expired or another client's key: 404. " +
      `A request sent without a key whose outcome was unknown (${unknown}) is found by the \`request_id\` that ` +
      "answer gave instead.",
    parameters: [
      {
        name: "idempotency_key",
        in: "query",
        required: false,
        description:
          'The key exactly as the `Idempotency-Key` header carries it: a structured-field string (`"..."`, ' +
          "escapes decoded) or bare, URL-encoded. One of `idempotency_key` and `request_id` is required.",
        // The quoted form of the longest key: two quotes, and every character escaped.
        schema: { type: "string", minLength: 1, maxLength: 2 * MAX_KEY_LENGTH + 2, example: examples.key },
      },
      {
        name: "request_id",
        in: "query",
        required: false,
        description: `The \`request_id\` of a ${unknown} answer (a request sent without a key).`,
        schema: { type: "string", pattern: "^[0-9]{1,19}$", example: "4711" },
      },
      ...listParameters(list.filter).map((p) =>
        p.name === "starting_after" || p.name === "ending_before"
          ? { ...p, schema: { ...p.schema, example: examples.read.id } }
          : p,
      ),
    ],
    responses: {
      "200": { description: `Your ${noun}s, newest first`, content: content(ref(`${object}List`), list.example) },
      "201": {
        description: `Complete: the stored answer, a ${noun}.`,
        headers: replayHeaders,
        content: content(ref(object), examples.created),
      },
      ...errorResponses([...SETTLE_ERRORS, ...errors.filter(isStored)]),
    },
  };
  const retrieve = {
    operationId: `get${object}`,
    "x-codeSamples": samples.get,
    summary: `Retrieve one of your ${noun}s`,
    parameters: [{ name: "id", in: "path", required: true, schema: { type: "string", example: examples.read.id } }],
    responses: {
      "200": { description: `The ${noun}`, content: content(ref(object), examples.read) },
      ...errorResponses(["invalid_path", "unauthorized", "not_found", "service_unavailable"]),
    },
  };
  return { [path]: { post: create, get: settle }, [`${path}/{id}`]: { get: retrieve } };
}

const AUTH = '-H "Authorization: Bearer $KEY"';

/** Each money route's list filter (GET without a key) and example page. */
const LIST_FILTERS = {
  Charge: {
    filter: { name: "customer", description: "Only this customer's charges.", example: "cus_123" },
    example: listExamples.charges,
  },
  Refund: {
    filter: { name: "charge", description: "Only this charge's refunds.", example: "ch_8a5b084aa7756bcf50ccc889" },
    example: listExamples.refunds,
  },
};

/** Every API answer carries its Request-Id (src/server/http/handleApi.ts): added to each documented response. */
function withRequestIds<Paths extends Record<string, Record<string, { responses: Record<string, object> }>>>(
  paths: Paths,
): Paths {
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        const { headers = {} } = response as { headers?: HeaderDocs };
        operation.responses[status] = { ...response, headers: { "Request-Id": headerDocs["Request-Id"], ...headers } };
      }
    }
  }
  return paths;
}

const requestSchemas = Object.fromEntries(
  MONEY_ROUTES.map((route) => [
    `Create${route.object}`,
    z.toJSONSchema(route.request, { io: "input", target: "draft-2020-12" }),
  ]),
);

const refundSchema = {
  type: "object",
  additionalProperties: false,
  required: [
    "id",
    "object",
    "charge",
    "amount_cents",
    "currency",
    "status",
    "reason",
    "gateway_refund_id",
    "created_at",
  ],
  properties: {
    id: { type: "string", pattern: "^re_" },
    object: { const: "refund" },
    charge: { type: "string", pattern: "^ch_", description: "The refunded charge" },
    amount_cents: { type: "integer", minimum: 1 },
    currency: { type: "string", pattern: "^[a-z]{3}$", description: "The charge's" },
    status: { const: "succeeded" },
    reason: { enum: [...REFUND_REASONS, null] },
    gateway_refund_id: { type: "string" },
    created_at: { type: "string", format: "date-time" },
  },
};

export const openApiDocument = {
  openapi: "3.1.0",
  info: { title: "Charges API", version: "1.0.0", description },
  servers: [{ url: "/" }],
  security: [{ bearer: [] }],
  paths: withRequestIds({
    ...Object.assign({}, ...MONEY_ROUTES.map(moneyPaths)),
    ...eventPaths({ content, ref, errorResponses }),
    "/api/health": {
      get: {
        operationId: "health",
        "x-codeSamples": HEALTH_SAMPLES,
        summary: "Health",
        security: [],
        responses: {
          "200": {
            description: "Up",
            content: content(
              { type: "object", required: ["status"], properties: { status: { const: "ok" } } },
              { status: "ok" },
            ),
          },
          ...errorResponses(["service_unavailable"]),
        },
      },
    },
  }),
  components: {
    securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "Your secret API key, sk_test_…" } },
    schemas: {
      ...requestSchemas,
      Charge: {
        type: "object",
        additionalProperties: false,
        required: [
          "id",
          "object",
          "amount_cents",
          "currency",
          "status",
          "customer_id",
          "failure_code",
          "gateway_charge_id",
          "amount_refunded_cents",
          "refunds",
          "created_at",
        ],
        properties: {
          id: { type: "string", pattern: "^ch_" },
          object: { const: "charge" },
          amount_cents: { type: "integer" },
          currency: { type: "string", pattern: "^[a-z]{3}$" },
          status: { enum: ["succeeded", "failed"] },
          customer_id: { type: ["string", "null"] },
          failure_code: { type: ["string", "null"] },
          gateway_charge_id: { type: "string" },
          amount_refunded_cents: { type: "integer", description: "What succeeded refunds gave back" },
          refunds: { type: "array", items: ref("Refund"), description: "Its refunds, oldest first" },
          requested_at: {
            type: "string",
            format: "date-time",
            description:
              "When the operation's first request arrived (the first attempt under its Idempotency-Key, or the " +
              "keyless request itself): when the customer paid. Absent only from answers stored before it was " +
              "added (a replay sends the stored bytes).",
          },
          created_at: {
            type: "string",
            format: "date-time",
            description:
              "When the charge was settled and recorded: after the gateway answered, or later when an unfinished " +
              "operation was completed by a retry or by the service's own recovery.",
          },
        },
      },
      Refund: refundSchema,
      ...eventSchemas(ref),
      ErrorDetails: {
        type: "object",
        properties: {
          fields: { type: "object", additionalProperties: { type: "array", items: { type: "string" } } },
          decline_code: { type: ["string", "null"] },
          charge: { type: "string" },
          age_seconds: {
            type: "number",
            description: "request_in_progress: how long the operation has been in flight",
          },
          request_id: {
            type: "string",
            description: "charge_outcome_unknown, refund_outcome_unknown: the handle to settle the request by",
          },
          gateway: {
            enum: ["refused", "no_trace"],
            description:
              "request_abandoned: what the gateway showed of the charge, received and refused, or no trace of it",
          },
          gateway_code: { type: "string", description: "request_abandoned, `gateway: refused`: the gateway's reason" },
        },
      },
      Error: {
        type: "object",
        required: ["error"],
        properties: {
          error: {
            allOf: [ref("ErrorDetails")],
            type: "object",
            required: ["code", "message", "retryable", "doc_url"],
            properties: {
              code: { enum: API_ERROR_CODES },
              message: { type: "string" },
              retryable: RETRYABLE_DOC,
              doc_url: { type: "string", format: "uri", description: "The code's entry in the API reference" },
            },
          },
        },
      },
      Problem: {
        description: "RFC 9457 problem details, sent when the request says `Accept: application/problem+json`.",
        allOf: [ref("ErrorDetails")],
        type: "object",
        required: ["type", "title", "status", "detail", "code", "retryable"],
        properties: {
          retryable: RETRYABLE_DOC,
          type: {
            type: "string",
            format: "uri",
            description: "The code's entry in the API reference (also `doc_url`)",
          },
          title: { type: "string" },
          status: { type: "integer" },
          detail: { type: "string" },
          code: { enum: API_ERROR_CODES },
          doc_url: { type: "string", format: "uri" },
        },
      },
    },
  },
} as const;
