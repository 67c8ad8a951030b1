import { z } from "zod";
import { createChargeSchema } from "~/server/charges/schema";
import type { ApiErrorCode } from "~/server/http/apiError";

const errorCodes: ApiErrorCode[] = [
  "unauthorized", "invalid_request", "invalid_json", "body_too_large", "unsupported_media_type", "invalid_idempotency_key",
  "idempotency_key_required", "idempotency_key_reused", "request_in_progress", "card_declined", "request_abandoned",
  "gateway_unavailable", "service_unavailable", "not_found", "method_not_allowed", "internal_error",
];

const error = (description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});
const retryAfter = { "Retry-After": { description: "Seconds to wait before retrying with the same key", schema: { type: "string" } } };

/** The OpenAPI 3.1 description of the public API, served at /api/openapi.json. */
export const openApiDocument = {
  openapi: "3.1.0",
  info: {
    title: "Charges API",
    version: "1.0.0",
    description:
      "Idempotent payments. Send one Idempotency-Key per logical operation and reuse it on every retry " +
      "(draft-ietf-httpapi-idempotency-key-header). Keys live 24 hours.",
  },
  servers: [{ url: "/" }],
  security: [{ bearer: [] }],
  paths: {
    "/api/charges": {
      post: {
        operationId: "createCharge",
        summary: "Create a charge",
        parameters: [
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            description: "1-64 printable ASCII characters (bare, or as a structured-field string in quotes); required once the rollout mode is `required`.",
            schema: { type: "string", minLength: 1, maxLength: 64 },
          },
        ],
        requestBody: { required: true, content: { "application/json": { schema: { $ref: "#/components/schemas/CreateCharge" } } } },
        responses: {
          "201": {
            description: "Charged. A replay of a finished request carries `Idempotent-Replay: true`.",
            headers: { "Idempotent-Replay": { schema: { type: "string", enum: ["true"] } } },
            content: { "application/json": { schema: { $ref: "#/components/schemas/Charge" } } },
          },
          "400": error("invalid_request, invalid_json, invalid_idempotency_key or idempotency_key_required"),
          "401": error("unauthorized"),
          "402": error("card_declined (stored and replayed like a success)"),
          "409": error("request_in_progress: the first request with this key is still running", retryAfter),
          "413": error("body_too_large"),
          "415": error("unsupported_media_type"),
          "422": error("idempotency_key_reused: the key was used with another payload or by another client"),
          "500": error("request_abandoned (replayed) or internal_error"),
          "503": error("gateway_unavailable or service_unavailable: retry with the same key", retryAfter),
        },
      },
    },
    "/api/charges/{id}": {
      get: {
        operationId: "getCharge",
        summary: "Retrieve one of your charges",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: {
          "200": { description: "The charge", content: { "application/json": { schema: { $ref: "#/components/schemas/Charge" } } } },
          "401": error("unauthorized"),
          "404": error("not_found"),
        },
      },
    },
    "/api/health": {
      get: {
        operationId: "health",
        security: [],
        responses: {
          "200": { description: "Up", content: { "application/json": { schema: { type: "object", required: ["status"], properties: { status: { const: "ok" } } } } } },
          "503": error("service_unavailable"),
        },
      },
    },
  },
  components: {
    securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "Your secret API key, sk_test_…" } },
    schemas: {
      CreateCharge: z.toJSONSchema(createChargeSchema, { io: "input", target: "draft-2020-12" }),
      Charge: {
        type: "object",
        additionalProperties: false,
        required: ["id", "object", "amount_cents", "currency", "status", "customer_id", "failure_code", "gateway_charge_id", "created_at"],
        properties: {
          id: { type: "string", pattern: "^ch_" },
          object: { const: "charge" },
          amount_cents: { type: "integer" },
          currency: { type: "string", pattern: "^[a-z]{3}$" },
          status: { enum: ["succeeded", "failed"] },
          customer_id: { type: ["string", "null"] },
          failure_code: { type: ["string", "null"] },
          gateway_charge_id: { type: "string" },
          created_at: { type: "string", format: "date-time" },
        },
      },
      Error: {
        type: "object",
        required: ["error"],
        properties: {
          error: {
            type: "object",
            required: ["code", "message"],
            properties: {
              code: { enum: errorCodes },
              message: { type: "string" },
              fields: { type: "object", additionalProperties: { type: "array", items: { type: "string" } } },
              decline_code: { type: ["string", "null"] },
              charge: { type: "string" },
            },
          },
        },
      },
    },
  },
} as const;
