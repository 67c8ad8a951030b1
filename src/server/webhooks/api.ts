import { z } from "zod";
import { apiClientContext } from "~/server/audit/audit";
import { DomainError } from "~/server/domainError";
import { ApiError, errorResponse, jsonResponse } from "~/server/http/apiError";
import { readJsonBody } from "~/server/http/readJsonBody";
import { requestInfo } from "~/server/http/requestInfo";
import { fieldErrors } from "~/server/operations/fieldErrors";
import { env } from "~/env";
import {
  createEndpoint,
  deleteEndpoint,
  endpointOf,
  listEndpoints,
  rotateSecret,
  serializeEndpoint,
  updateEndpoint,
} from "./endpoints";

/**
 * The public API of webhook endpoints (src/app/api/webhook_endpoints): a client manages its own. The route files
 * stay thin: they authenticate and call these, which parse, call endpoints.ts and map its refusals to the API's
 * error format once.
 */
const createSchema = z
  .object({
    url: z.string().min(1).max(2048),
    enabled_events: z.array(z.string().min(1).max(64)).min(1).max(32),
    description: z.string().max(255).nullish(),
  })
  .strict();

const updateSchema = z
  .object({
    url: z.string().min(1).max(2048).optional(),
    enabled_events: z.array(z.string().min(1).max(64)).min(1).max(32).optional(),
    description: z.string().max(255).nullish(),
    disabled: z.boolean().optional(),
  })
  .strict();

const rotateSchema = z
  .object({
    overlap_seconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400)
      .optional(),
  })
  .strict();

function parsed<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  throw new ApiError("invalid_request", undefined, { fields: fieldErrors(result.error) });
}

/** A domain refusal as the API says it. */
async function answering(work: () => Promise<Response>): Promise<Response> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    if (error.kind === "not_found") return errorResponse("not_found", { message: error.message });
    return errorResponse("invalid_request", { message: error.message });
  }
}

const json = (status: number, body: unknown) => jsonResponse(status, JSON.stringify(body));

export const endpointsApi = {
  list: async (apiClientId: number) =>
    json(200, {
      object: "list",
      data: (await listEndpoints(apiClientId)).map((e) => serializeEndpoint(e)),
      has_more: false,
      url: "/api/webhook_endpoints",
    }),

  create: (apiClientId: number, request: Request) =>
    answering(async () => {
      const body = parsed(createSchema, await readJsonBody(request, env.MAX_BODY_BYTES));
      const audit = apiClientContext(apiClientId, requestInfo(request.headers));
      const input = { url: body.url, eventTypes: body.enabled_events, description: body.description };
      const { endpoint, secret } = await createEndpoint(apiClientId, input, audit);
      return json(201, serializeEndpoint(endpoint, secret));
    }),

  retrieve: (apiClientId: number, id: string) =>
    answering(async () => {
      const endpoint = await endpointOf(apiClientId, id);
      if (!endpoint) throw new DomainError("not_found", `No webhook endpoint ${id}.`);
      return json(200, serializeEndpoint(endpoint));
    }),

  update: (apiClientId: number, id: string, request: Request) =>
    answering(async () => {
      const body = parsed(updateSchema, await readJsonBody(request, env.MAX_BODY_BYTES));
      const audit = apiClientContext(apiClientId, requestInfo(request.headers));
      const changes = {
        url: body.url,
        eventTypes: body.enabled_events,
        description: body.description,
        enabled: body.disabled === undefined ? undefined : !body.disabled,
      };
      return json(200, serializeEndpoint(await updateEndpoint(apiClientId, id, changes, audit)));
    }),

  remove: (apiClientId: number, id: string, request: Request) =>
    answering(async () => {
      const endpoint = await deleteEndpoint(
        apiClientId,
        id,
        apiClientContext(apiClientId, requestInfo(request.headers)),
      );
      return json(200, { id: endpoint.id, object: "webhook_endpoint", deleted: true });
    }),

  rotate: (apiClientId: number, id: string, request: Request) =>
    answering(async () => {
      const body = parsed(rotateSchema, await readJsonBody(request, env.MAX_BODY_BYTES).catch(() => ({})));
      const audit = apiClientContext(apiClientId, requestInfo(request.headers));
      const overlap = body.overlap_seconds === undefined ? undefined : body.overlap_seconds * 1000;
      const { endpoint, secret } = await rotateSecret(apiClientId, id, audit, overlap);
      return json(200, serializeEndpoint(endpoint, secret));
    }),
};
