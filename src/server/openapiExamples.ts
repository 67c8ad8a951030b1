/**
 * What /docs shows an integrator besides the schemas: example answers with real values, and a curl and an SDK
 * (@charges/client) sample for every operation, made from each money route's own `doc.examples`.
 * test/docsSamples.test.ts runs every sample against the server, with the examples' keys and ids swapped for the
 * ones it makes; test/openapi.test.ts checks every example against its schema.
 */
import { API_ERRORS, type ApiErrorCode, docPath, isRetryableCode } from "@charges/client/errorRegistry";
import type { MoneyRouteDoc } from "~/server/operations/moneyOperation";

/** The values the examples share, in the shapes real answers have. */
export const SAMPLE = {
  /** Where the samples' server is: `npm start`'s. */
  baseUrl: "http://127.0.0.1:3000",
  key: "8e03978e-40d5-43e8-bc93-6894a57f9324",
  requestId: "req_f8bb7397c5b8fa45180c",
  originalRequestId: "req_1c9e4b7a2d5f8e3b6a0c",
  expires: "Mon, 07 Dec 2026 05:41:05 GMT",
} as const;

/** The details some codes carry, as a real answer has them. */
const ERROR_DETAILS: Partial<Record<ApiErrorCode, Record<string, unknown>>> = {
  invalid_request: { fields: { amount_cents: ["Too small: expected number to be >0"] } },
  card_declined: { decline_code: "card_declined", charge: "ch_2b7e9f1a4c8d3e6b5a0f9c7d" },
  refund_declined: { decline_code: "charge_disputed" },
  request_in_progress: { age_seconds: 1.2 },
  refund_in_progress: { held_cents: 1999 },
  request_abandoned: { gateway: "no_trace" },
  charge_outcome_unknown: { request_id: "4711" },
  refund_outcome_unknown: { request_id: "4712" },
};

/** A code's answer in the default format (`{"error": {...}}`), from a server at SAMPLE.baseUrl. */
export function errorExample(code: ApiErrorCode) {
  return {
    error: {
      code,
      message: API_ERRORS[code].message,
      retryable: isRetryableCode(code),
      doc_url: `${SAMPLE.baseUrl}${docPath(code)}`,
      ...ERROR_DETAILS[code],
    },
  };
}

/** The same answer as an RFC 9457 problem (`Accept: application/problem+json`). */
export function problemExample(code: ApiErrorCode) {
  const { code: _code, message, retryable, doc_url, ...details } = errorExample(code).error;
  const { status, title } = API_ERRORS[code];
  return { type: doc_url, title, status, detail: message, code, retryable, doc_url, ...details };
}

/** Redoc's `x-codeSamples`: shown beside each operation. */
export type CodeSample = { lang: "Shell" | "TypeScript"; label: "curl" | "@charges/client"; source: string };

const curl = (source: string): CodeSample => ({
  lang: "Shell",
  label: "curl",
  source: `# API=${SAMPLE.baseUrl} KEY=<your API key>\n${source}`,
});
const sdk = (source: string): CodeSample => ({
  lang: "TypeScript",
  label: "@charges/client",
  source:
    'import { ChargesClient } from "@charges/client";\n\n' +
    `const client = new ChargesClient({ baseUrl: "${SAMPLE.baseUrl}", apiKey: process.env.CHARGES_API_KEY! });\n` +
    source,
});

const auth = '-H "Authorization: Bearer $KEY"';
/** An object as TypeScript source: `{ amount_cents: 1999, currency: "usd" }`. */
const literal = (body: object) =>
  `{ ${Object.entries(body)
    .map(([name, value]) => `${name}: ${JSON.stringify(value)}`)
    .join(", ")} }`;

/**
 * The samples of a money route's three operations, from its examples. Each SDK sample prints one line: what it
 * made (id, replayed), what settling found (the id, else the state), what it read (id, amount).
 */
export function codeSamples({ path, object, examples }: MoneyRouteDoc & { path: string }) {
  const noun = object.toLowerCase();
  const resource = path.split("/").pop()!; // client.charges, client.refunds
  const { key, request, read } = examples;
  return {
    create: [
      curl(
        "# One new Idempotency-Key per operation (node -p 'crypto.randomUUID()'), the same on every retry.\n" +
          `curl -s -i "$API${path}" ${auth} -H "Content-Type: application/json" \\\n` +
          `  -H "Idempotency-Key: ${key}" \\\n` +
          `  -d '${JSON.stringify(request)}'`,
      ),
      sdk(
        `const result = await client.${resource}.create(\n` +
          `  ${literal(request)},\n` +
          `  { idempotencyKey: "${key}" }, // made once for the operation, stored with it, sent on every retry\n` +
          ");\n" +
          `if (result.ok) console.log(result.${noun}.id, result.replayed);\n` +
          "else console.log(result.error.code, result.error.retryable); // a final answer",
      ),
    ],
    find: [
      curl(`curl -s -i "$API${path}?idempotency_key=${key}" ${auth}`),
      sdk(
        `const found = await client.${resource}.findByIdempotencyKey("${key}");\n` +
          "// complete (found.result), in_progress (ask again after found.retryAfterMs), unknown (resend, same key)\n" +
          `if (found.state === "complete" && found.result.ok) console.log(found.result.${noun}.id);\n` +
          "else console.log(found.state);",
      ),
    ],
    get: [
      curl(`curl -s -i "$API${path}/${read.id}" ${auth}`),
      sdk(
        `const ${noun} = await client.${resource}.retrieve("${read.id}"); // a 404 throws a ChargesApiError\n` +
          `console.log(${noun}.id, ${noun}.amount_cents);`,
      ),
    ],
  };
}

export const HEALTH_SAMPLES: CodeSample[] = [
  { lang: "Shell", label: "curl", source: `# API=${SAMPLE.baseUrl}\ncurl -s -i "$API/api/health"` },
];
