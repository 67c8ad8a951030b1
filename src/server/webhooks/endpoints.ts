import { randomBytes } from "node:crypto";
import { env } from "~/env";
import type { WebhookEndpoint } from "~/generated/prisma/client";
import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";
import { EVENT_TYPES, isEventType } from "~/server/events/types";
import { urlProblem } from "./addresses";
import { newSigningSecret } from "./signing";

/**
 * A client's webhook endpoints: where its events are posted, which types, and the secret that signs them. The
 * API (src/app/api/webhook_endpoints), the CLI (scripts/webhooks.ts) and the dashboard (trpc/routers/webhooks.ts)
 * all manage them through here. A secret is shown once, when made (create, rotate); after that only its prefix.
 */
export const MAX_ENDPOINTS_PER_CLIENT = 16;

export type EndpointInput = { url: string; eventTypes: string[]; description?: string | null };

const newEndpointId = () => `we_${randomBytes(12).toString("hex")}`;

/** The endpoint as the API shows it; `secret` only where it was just made. */
export function serializeEndpoint(endpoint: WebhookEndpoint, secret?: string) {
  return {
    id: endpoint.id,
    object: "webhook_endpoint",
    url: endpoint.url,
    enabled_events: endpoint.eventTypes === "*" ? ["*"] : endpoint.eventTypes.split(","),
    description: endpoint.description,
    status: endpoint.enabled ? "enabled" : "disabled",
    disabled_reason: endpoint.disabledReason,
    failing_since: endpoint.failingSince?.toISOString() ?? null,
    secret_hint: `${endpoint.secret.slice(0, 10)}...`,
    previous_secret_expires_at: endpoint.previousSecretUntil?.toISOString() ?? null,
    created_at: endpoint.createdAt.toISOString(),
    ...(secret ? { secret } : {}),
  };
}

function validated(input: EndpointInput): { url: string; eventTypes: string; description: string | null } {
  const problem = urlProblem(input.url);
  if (problem) throw new DomainError("invalid", `url ${problem}.`);
  if (input.url.length > 2048) throw new DomainError("invalid", "url is longer than 2048 characters.");
  const types = [...new Set(input.eventTypes)];
  if (types.length === 0) throw new DomainError("invalid", 'enabled_events must name event types, or "*".');
  if (!types.includes("*")) {
    const unknown = types.filter((t) => !isEventType(t));
    if (unknown.length > 0)
      throw new DomainError(
        "invalid",
        `enabled_events: unknown ${unknown.join(", ")} (known: ${EVENT_TYPES.join(", ")}).`,
      );
  }
  const description = input.description?.slice(0, 255) ?? null;
  return { url: input.url, eventTypes: types.includes("*") ? "*" : types.sort().join(","), description };
}

const target = (id: string) => ({ type: "webhook_endpoint" as const, id });

export async function createEndpoint(apiClientId: number, input: EndpointInput, audit: AuditContext) {
  const fields = validated(input);
  const count = await db.webhookEndpoint.count({ where: { apiClientId } });
  if (count >= MAX_ENDPOINTS_PER_CLIENT)
    throw new DomainError("invalid", `A client has at most ${MAX_ENDPOINTS_PER_CLIENT} endpoints.`);
  const secret = newSigningSecret();
  const endpoint = await db.webhookEndpoint.create({
    data: { id: newEndpointId(), apiClientId, ...fields, secret, createdAt: new Date() },
  });
  await recordAudit(audit, {
    action: "webhook_endpoint.created",
    target: target(endpoint.id),
    details: { api_client: apiClientId, url: fields.url, event_types: fields.eventTypes },
  });
  return { endpoint, secret };
}

/** An endpoint of this client (null: none, or another client's: the same to the caller). */
export async function endpointOf(apiClientId: number | null, id: string) {
  const endpoint = await db.webhookEndpoint.findUnique({ where: { id } });
  return endpoint && (apiClientId === null || endpoint.apiClientId === apiClientId) ? endpoint : null;
}

export const listEndpoints = (apiClientId: number | null) =>
  db.webhookEndpoint.findMany({
    where: apiClientId === null ? {} : { apiClientId },
    orderBy: { createdAt: "desc" },
  });

function found(endpoint: WebhookEndpoint | null, id: string): WebhookEndpoint {
  if (!endpoint) throw new DomainError("not_found", `There is no webhook endpoint ${id}.`);
  return endpoint;
}

/**
 * A new secret; the current one keeps signing beside it for WEBHOOK_ROTATION_OVERLAP_MS (or `overlapMs`), so a
 * receiver can switch without losing a delivery. Its `webhook-signature` carries both meanwhile.
 */
export async function rotateSecret(
  apiClientId: number | null,
  id: string,
  audit: AuditContext,
  overlapMs = env.WEBHOOK_ROTATION_OVERLAP_MS,
) {
  const endpoint = found(await endpointOf(apiClientId, id), id);
  const secret = newSigningSecret();
  const updated = await db.webhookEndpoint.update({
    where: { id: endpoint.id },
    data: { secret, previousSecret: endpoint.secret, previousSecretUntil: new Date(Date.now() + overlapMs) },
  });
  await recordAudit(audit, {
    action: "webhook_endpoint.secret_rotated",
    target: target(endpoint.id),
    details: { previous_secret_until: updated.previousSecretUntil?.toISOString() },
  });
  return { endpoint: updated, secret };
}

/** URL, types or description; re-enabling clears the reason and the failing streak. */
export async function updateEndpoint(
  apiClientId: number | null,
  id: string,
  changes: Partial<EndpointInput> & { enabled?: boolean },
  audit: AuditContext,
) {
  const endpoint = found(await endpointOf(apiClientId, id), id);
  const fields = validated({
    url: changes.url ?? endpoint.url,
    eventTypes: changes.eventTypes ?? endpoint.eventTypes.split(","),
    description: changes.description === undefined ? endpoint.description : changes.description,
  });
  const enabling = changes.enabled === true && !endpoint.enabled;
  await recordAudit(audit, {
    action: "webhook_endpoint.updated",
    target: target(endpoint.id),
    details: { ...fields, enabled: changes.enabled ?? endpoint.enabled },
  });
  return db.webhookEndpoint.update({
    where: { id: endpoint.id },
    data: {
      ...fields,
      ...(changes.enabled === false
        ? { enabled: false, disabledReason: "disabled by its owner", disabledAt: new Date() }
        : {}),
      ...(enabling ? { enabled: true, disabledReason: null, disabledAt: null, failingSince: null } : {}),
    },
  });
}

/** Deletes the endpoint; its deliveries not yet made are cancelled, in the same transaction. */
export async function deleteEndpoint(apiClientId: number | null, id: string, audit: AuditContext) {
  const endpoint = found(await endpointOf(apiClientId, id), id);
  await db.$transaction([
    db.webhookDelivery.updateMany({
      where: { endpointId: endpoint.id, state: "pending" },
      data: { state: "cancelled" },
    }),
    db.webhookEndpoint.delete({ where: { id: endpoint.id } }),
  ]);
  await recordAudit(audit, {
    action: "webhook_endpoint.deleted",
    target: target(endpoint.id),
    details: { url: endpoint.url },
  });
  return endpoint;
}
