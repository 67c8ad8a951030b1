/**
 * Onboarding API clients and managing their keys: create a client, issue a key
 * (shown once, stored hashed), rotate with a grace period during which the old
 * key still works, revoke at once. Every change is audited, in the same
 * transaction. Used by the dashboard (tRPC) and `npm run clients`.
 */
import { recordAudit, type AuditContext } from "~/server/audit/audit";
import { forgetApiKey, generateApiKey } from "~/server/auth/apiClients";
import { announceKeyChange } from "~/server/auth/keyRevocations";
import { db } from "~/server/db";
import { DomainError } from "~/server/domainError";

export type KeyState = "active" | "grace" | "expired" | "revoked";

export function keyState(key: { expiresAt: Date | null; revokedAt: Date | null }, now = new Date()): KeyState {
  if (key.revokedAt) return "revoked";
  if (!key.expiresAt) return "active";
  return key.expiresAt > now ? "grace" : "expired";
}

/** Clients with their keys (never the secrets), newest first. */
export async function listApiClients() {
  const clients = await db.apiClient.findMany({
    orderBy: { id: "desc" },
    include: {
      keys: {
        select: { id: true, keyPrefix: true, createdAt: true, expiresAt: true, revokedAt: true },
        orderBy: { id: "desc" },
      },
    },
  });
  const now = new Date();
  return clients.map((c) => ({ ...c, keys: c.keys.map((k) => ({ ...k, state: keyState(k, now) })) }));
}

/** A new client and its first key; the key is in the answer and nowhere else. */
export async function createClient(input: { name: string; contactEmail: string | null }, context: AuditContext) {
  const key = generateApiKey();
  return db.$transaction(async (tx) => {
    const client = await tx.apiClient.create({ data: { name: input.name, contactEmail: input.contactEmail } });
    const created = await tx.apiKey.create({
      data: { apiClientId: client.id, keyHash: key.keyHash, keyPrefix: key.keyPrefix },
    });
    const target = { type: "api_client", id: client.id } as const;
    await recordAudit(context, { action: "api_client.created", target, details: { name: client.name } }, tx);
    await recordAudit(
      context,
      { action: "api_key.issued", target, details: { key_id: created.id, prefix: key.keyPrefix } },
      tx,
    );
    return { client, apiKey: key.apiKey, keyId: created.id };
  });
}

async function requireClient(tx: Pick<typeof db, "apiClient">, clientId: number) {
  const client = await tx.apiClient.findUnique({ where: { id: clientId } });
  if (!client) throw new DomainError("not_found", `There is no API client ${clientId}.`);
  return client;
}

/** One more key for the client; its other keys are untouched. */
export async function issueKey(clientId: number, context: AuditContext) {
  const key = generateApiKey();
  return db.$transaction(async (tx) => {
    await requireClient(tx, clientId);
    const created = await tx.apiKey.create({
      data: { apiClientId: clientId, keyHash: key.keyHash, keyPrefix: key.keyPrefix },
    });
    const details = { key_id: created.id, prefix: key.keyPrefix };
    await recordAudit(context, { action: "api_key.issued", target: { type: "api_client", id: clientId }, details }, tx);
    return { apiKey: key.apiKey, keyId: created.id };
  });
}

/**
 * A new key; the client's other working keys stop working `graceMs` from now
 * (at once with 0), so the client can deploy the new one first.
 */
export async function rotateKey(clientId: number, graceMs: number, context: AuditContext) {
  const key = generateApiKey();
  const graceEndsAt = new Date(Date.now() + graceMs);
  const result = await db.$transaction(async (tx) => {
    await requireClient(tx, clientId);
    const old = await tx.apiKey.findMany({
      where: { apiClientId: clientId, revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: graceEndsAt } }] },
    });
    await tx.apiKey.updateMany({ where: { id: { in: old.map((k) => k.id) } }, data: { expiresAt: graceEndsAt } });
    await announceKeyChange(tx);
    const created = await tx.apiKey.create({
      data: { apiClientId: clientId, keyHash: key.keyHash, keyPrefix: key.keyPrefix },
    });
    const details = {
      key_id: created.id,
      prefix: key.keyPrefix,
      old_key_ids: old.map((k) => k.id),
      grace_ends_at: graceEndsAt,
    };
    await recordAudit(
      context,
      { action: "api_key.rotated", target: { type: "api_client", id: clientId }, details },
      tx,
    );
    return { apiKey: key.apiKey, keyId: created.id, graceEndsAt, old };
  });
  for (const k of result.old) forgetApiKey(k.keyHash);
  return { apiKey: result.apiKey, keyId: result.keyId, graceEndsAt };
}

/** Stops a key at once (in other running processes within a second: keyRevocations.ts). */
export async function revokeKey(keyId: number, context: AuditContext) {
  const key = await db.$transaction(async (tx) => {
    const key = await tx.apiKey.findUnique({ where: { id: keyId } });
    if (!key) throw new DomainError("not_found", `There is no API key ${keyId}.`);
    if (key.revokedAt) throw new DomainError("conflict", "This key is already revoked.");
    await tx.apiKey.update({ where: { id: keyId }, data: { revokedAt: new Date() } });
    await announceKeyChange(tx);
    const details = { key_id: keyId, prefix: key.keyPrefix };
    await recordAudit(
      context,
      { action: "api_key.revoked", target: { type: "api_client", id: key.apiClientId }, details },
      tx,
    );
    return key;
  });
  forgetApiKey(key.keyHash);
}
