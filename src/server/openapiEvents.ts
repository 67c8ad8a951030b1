/**
 * The API reference of events, lists and webhook endpoints (docs/webhooks.md): their paths, parameters, schemas
 * and examples, with a curl sample each and an SDK sample for what the SDK reads (events, lists). Built by
 * openapi.ts with its own helpers (passed in: one document, no import cycle).
 */
import type { ApiErrorCode } from "@charges/client/errorRegistry";
import { CHARGE_EXAMPLES } from "~/server/charges/examples";
import { EVENT_TYPES } from "~/server/events/types";
import { REFUND_EXAMPLES } from "~/server/refunds/examples";
import { SAMPLE } from "./openapiExamples";

type Helpers = {
  content: (schema: object, example?: object) => object;
  ref: (name: string) => object;
  errorResponses: (codes: ApiErrorCode[]) => object;
};

const auth = '-H "Authorization: Bearer $KEY"';
const curl = (source: string) => ({
  lang: "Shell" as const,
  label: "curl" as const,
  source: `# API=${SAMPLE.baseUrl} KEY=<your API key>\n${source}`,
});
const sdk = (source: string) => ({
  lang: "TypeScript" as const,
  label: "@charges/client" as const,
  source:
    'import { ChargesClient } from "@charges/client";\n\n' +
    `const client = new ChargesClient({ baseUrl: "${SAMPLE.baseUrl}", apiKey: process.env.CHARGES_API_KEY! });\n` +
    source,
});

const EVENT_ID = "evt_5a1f0c3e9b7d2a4c6e8f0b1d";
const ENDPOINT_ID = "we_3c7e1a9f5b2d8c4e6a0f1b3d";
const CREATED_RANGE = "2026-12-06T00:00:00Z";

export const EVENT_EXAMPLE = {
  id: EVENT_ID,
  object: "event",
  type: "charge.succeeded",
  sequence: 4711,
  created_at: CHARGE_EXAMPLES.created.created_at,
  data: { object: CHARGE_EXAMPLES.created },
  request: { id: "4711", idempotency_key: CHARGE_EXAMPLES.key },
};

const ENDPOINT_EXAMPLE = {
  id: ENDPOINT_ID,
  object: "webhook_endpoint",
  url: "https://shop.example/webhooks",
  enabled_events: ["*"],
  description: "orders",
  status: "enabled",
  disabled_reason: null,
  failing_since: null,
  secret_hint: "whsec_MfKQ...",
  previous_secret_expires_at: null,
  created_at: "2026-12-06T05:40:00.000Z",
};
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/** Stripe's list parameters, on every list; `filter` is a list's own (customer, charge, type). */
export function listParameters(filter?: { name: string; description: string; example: string; enum?: string[] }) {
  const bound = (name: string, what: string) => ({
    name: `created[${name}]`,
    in: "query",
    required: false,
    description: `Created ${what} this time (ISO 8601, or Unix seconds).`,
    schema: { type: "string", example: CREATED_RANGE },
  });
  return [
    ...(filter
      ? [
          {
            name: filter.name,
            in: "query",
            required: false,
            description: filter.description,
            schema: { type: "string", example: filter.example, ...(filter.enum ? {} : {}) },
          },
        ]
      : []),
    {
      name: "limit",
      in: "query",
      required: false,
      description: "How many, 1 to 100 (default 10).",
      schema: { type: "integer", minimum: 1, maximum: 100, example: 10 },
    },
    {
      name: "starting_after",
      in: "query",
      required: false,
      description: "The page after this object (older ones): the id of the previous page's last object.",
      schema: { type: "string", example: EVENT_ID },
    },
    {
      name: "ending_before",
      in: "query",
      required: false,
      description: "The page before this object (newer ones): the id of the next page's first object.",
      schema: { type: "string", example: EVENT_ID },
    },
    bound("gte", "at or after"),
    bound("gt", "after"),
    bound("lte", "at or before"),
    bound("lt", "before"),
  ];
}

/** A list schema of `item` (Stripe's list object). */
export const listSchema = (ref: (name: string) => object, item: string, url: string) => ({
  type: "object",
  additionalProperties: false,
  required: ["object", "data", "has_more", "url"],
  properties: {
    object: { const: "list" },
    data: { type: "array", items: ref(item), description: "Newest first" },
    has_more: { type: "boolean", description: "Whether there is more beyond this page in its direction" },
    url: { const: url },
  },
});

export const listExamples = {
  charges: { object: "list", data: [CHARGE_EXAMPLES.read], has_more: false, url: "/api/charges" },
  refunds: { object: "list", data: [REFUND_EXAMPLES.created], has_more: false, url: "/api/refunds" },
};

export function eventSchemas(ref: (name: string) => object) {
  return {
    Event: {
      type: "object",
      additionalProperties: false,
      required: ["id", "object", "type", "sequence", "created_at", "data", "request"],
      properties: {
        id: { type: "string", pattern: "^evt_", description: "Stable; the webhook-id of its deliveries" },
        object: { const: "event" },
        type: { enum: [...EVENT_TYPES] },
        sequence: { type: "integer", description: "Increases with each of your events (with gaps)" },
        created_at: { type: "string", format: "date-time" },
        data: {
          type: "object",
          required: ["object"],
          properties: {
            object: { type: "object", description: "The charge or refund as GET shows it, or the operation" },
          },
        },
        request: {
          type: "object",
          required: ["id", "idempotency_key"],
          properties: {
            id: { type: ["string", "null"], description: "The operation's request id" },
            idempotency_key: { type: ["string", "null"], description: "Its Idempotency-Key; null: keyless" },
          },
        },
      },
    },
    EventList: listSchema(ref, "Event", "/api/events"),
    ChargeList: listSchema(ref, "Charge", "/api/charges"),
    RefundList: listSchema(ref, "Refund", "/api/refunds"),
    WebhookEndpoint: {
      type: "object",
      additionalProperties: false,
      required: ["id", "object", "url", "enabled_events", "status", "created_at"],
      properties: {
        id: { type: "string", pattern: "^we_" },
        object: { const: "webhook_endpoint" },
        url: { type: "string", format: "uri" },
        enabled_events: { type: "array", items: { enum: ["*", ...EVENT_TYPES] } },
        description: { type: ["string", "null"] },
        status: { enum: ["enabled", "disabled"] },
        disabled_reason: { type: ["string", "null"], description: "Why it was disabled (failing since when)" },
        failing_since: { type: ["string", "null"], format: "date-time" },
        secret_hint: { type: "string" },
        previous_secret_expires_at: {
          type: ["string", "null"],
          format: "date-time",
          description: "After a rotation: until when the previous secret signs too",
        },
        created_at: { type: "string", format: "date-time" },
        secret: { type: "string", pattern: "^whsec_", description: "Only when made or rotated: shown once" },
      },
    },
    WebhookEndpointList: listSchema(ref, "WebhookEndpoint", "/api/webhook_endpoints"),
    CreateWebhookEndpoint: {
      type: "object",
      additionalProperties: false,
      required: ["url", "enabled_events"],
      properties: {
        url: { type: "string", maxLength: 2048, description: "http(s); no private addresses (docs/webhooks.md)" },
        enabled_events: { type: "array", minItems: 1, items: { enum: ["*", ...EVENT_TYPES] } },
        description: { type: ["string", "null"], maxLength: 255 },
      },
    },
    UpdateWebhookEndpoint: {
      type: "object",
      additionalProperties: false,
      properties: {
        url: { type: "string", maxLength: 2048 },
        enabled_events: { type: "array", minItems: 1, items: { enum: ["*", ...EVENT_TYPES] } },
        description: { type: ["string", "null"], maxLength: 255 },
        disabled: { type: "boolean", description: "false re-enables (and clears the failing streak)" },
      },
    },
    RotateWebhookSecret: {
      type: "object",
      additionalProperties: false,
      properties: {
        overlap_seconds: {
          type: "integer",
          minimum: 0,
          maximum: 604_800,
          description: "How long the previous secret signs too (default: a day)",
        },
      },
    },
    DeletedWebhookEndpoint: {
      type: "object",
      required: ["id", "object", "deleted"],
      properties: { id: { type: "string" }, object: { const: "webhook_endpoint" }, deleted: { const: true } },
    },
  };
}

export function eventPaths({ content, ref, errorResponses }: Helpers) {
  const readErrors = errorResponses(["invalid_request", "unauthorized", "service_unavailable"]);
  const oneErrors = errorResponses(["unauthorized", "not_found", "service_unavailable"]);
  const writeErrors = errorResponses(["invalid_request", "invalid_json", "unauthorized", "service_unavailable"]);
  const idParam = (example: string) => ({
    name: "id",
    in: "path",
    required: true,
    schema: { type: "string", example },
  });
  const endpoint = `/api/webhook_endpoints/${ENDPOINT_ID}`;
  return {
    "/api/events": {
      get: {
        operationId: "listEvents",
        summary: "List your events",
        description:
          "What happened to your money, newest first: every event is written in the transaction of the change it " +
          "reports, and posted to your webhook endpoints (docs/webhooks.md).",
        "x-codeSamples": [
          curl(`curl -s "$API/api/events?type=charge.succeeded&limit=10" ${auth}`),
          sdk(
            'const page = await client.events.list({ type: "charge.succeeded", limit: 10 });\n' +
              "console.log(page.data.length, page.has_more);",
          ),
        ],
        parameters: listParameters({
          name: "type",
          description: "One type (`charge.succeeded`), or a family (`charge.*`).",
          example: "charge.succeeded",
        }),
        responses: {
          "200": {
            description: "A page of events",
            content: content(ref("EventList"), {
              object: "list",
              data: [EVENT_EXAMPLE],
              has_more: false,
              url: "/api/events",
            }),
          },
          ...readErrors,
        },
      },
    },
    "/api/events/{id}": {
      get: {
        operationId: "getEvent",
        summary: "Retrieve one of your events",
        "x-codeSamples": [
          curl(`curl -s "$API/api/events/${EVENT_ID}" ${auth}`),
          sdk(`const event = await client.events.retrieve("${EVENT_ID}");\nconsole.log(event.type);`),
        ],
        parameters: [idParam(EVENT_ID)],
        responses: { "200": { description: "The event", content: content(ref("Event"), EVENT_EXAMPLE) }, ...oneErrors },
      },
    },
    "/api/webhook_endpoints": {
      get: {
        operationId: "listWebhookEndpoints",
        summary: "List your webhook endpoints",
        "x-codeSamples": [curl(`curl -s "$API/api/webhook_endpoints" ${auth}`)],
        responses: {
          "200": {
            description: "Your endpoints (no secrets)",
            content: content(ref("WebhookEndpointList"), {
              object: "list",
              data: [ENDPOINT_EXAMPLE],
              has_more: false,
              url: "/api/webhook_endpoints",
            }),
          },
          ...readErrors,
        },
      },
      post: {
        operationId: "createWebhookEndpoint",
        summary: "Create a webhook endpoint",
        description: "Its signing secret is in this answer only: keep it.",
        "x-codeSamples": [
          curl(
            `curl -s "$API/api/webhook_endpoints" ${auth} -H "Content-Type: application/json" \\\n` +
              `  -d '{"url": "https://shop.example/webhooks", "enabled_events": ["*"]}'`,
          ),
        ],
        requestBody: {
          required: true,
          content: content(ref("CreateWebhookEndpoint"), {
            url: "https://shop.example/webhooks",
            enabled_events: ["*"],
            description: "orders",
          }),
        },
        responses: {
          "201": {
            description: "The endpoint, with its secret (shown once)",
            content: content(ref("WebhookEndpoint"), { ...ENDPOINT_EXAMPLE, secret: SECRET }),
          },
          ...writeErrors,
        },
      },
    },
    "/api/webhook_endpoints/{id}": {
      get: {
        operationId: "getWebhookEndpoint",
        summary: "Retrieve a webhook endpoint",
        "x-codeSamples": [curl(`curl -s "$API${endpoint}" ${auth}`)],
        parameters: [idParam(ENDPOINT_ID)],
        responses: {
          "200": { description: "The endpoint", content: content(ref("WebhookEndpoint"), ENDPOINT_EXAMPLE) },
          ...oneErrors,
        },
      },
      post: {
        operationId: "updateWebhookEndpoint",
        summary: "Update a webhook endpoint (URL, events, or re-enable it)",
        "x-codeSamples": [
          curl(`curl -s "$API${endpoint}" ${auth} -H "Content-Type: application/json" -d '{"disabled": false}'`),
        ],
        parameters: [idParam(ENDPOINT_ID)],
        requestBody: { required: true, content: content(ref("UpdateWebhookEndpoint"), { disabled: false }) },
        responses: {
          "200": { description: "The endpoint", content: content(ref("WebhookEndpoint"), ENDPOINT_EXAMPLE) },
          ...errorResponses(["invalid_request", "invalid_json", "unauthorized", "not_found", "service_unavailable"]),
        },
      },
      delete: {
        operationId: "deleteWebhookEndpoint",
        summary: "Delete a webhook endpoint",
        description: "Its deliveries not yet made are cancelled.",
        "x-codeSamples": [curl(`curl -s -X DELETE "$API${endpoint}" ${auth}`)],
        parameters: [idParam(ENDPOINT_ID)],
        responses: {
          "200": {
            description: "Deleted",
            content: content(ref("DeletedWebhookEndpoint"), {
              id: ENDPOINT_ID,
              object: "webhook_endpoint",
              deleted: true,
            }),
          },
          ...oneErrors,
        },
      },
    },
    "/api/webhook_endpoints/{id}/rotate": {
      post: {
        operationId: "rotateWebhookSecret",
        summary: "Rotate a webhook endpoint's signing secret",
        description:
          "A new secret, shown once. The previous one keeps signing beside it for `overlap_seconds`: every " +
          "delivery meanwhile carries both signatures.",
        "x-codeSamples": [
          curl(
            `curl -s "$API${endpoint}/rotate" ${auth} -H "Content-Type: application/json" \\\n` +
              `  -d '{"overlap_seconds": 86400}'`,
          ),
        ],
        parameters: [idParam(ENDPOINT_ID)],
        requestBody: { required: false, content: content(ref("RotateWebhookSecret"), { overlap_seconds: 86_400 }) },
        responses: {
          "200": {
            description: "The endpoint, with its new secret (shown once)",
            content: content(ref("WebhookEndpoint"), {
              ...ENDPOINT_EXAMPLE,
              secret: SECRET,
              previous_secret_expires_at: "2026-12-07T05:40:00.000Z",
            }),
          },
          ...errorResponses(["invalid_request", "unauthorized", "not_found", "service_unavailable"]),
        },
      },
    },
  };
}
