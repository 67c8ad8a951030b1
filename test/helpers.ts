import { randomUUID } from "node:crypto";
import * as mariadb from "mariadb";
import { createApiClient } from "~/server/auth/apiClients";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { db, disconnectDatabase } from "~/server/db";

export const APP_URL = process.env.TEST_APP_URL ?? "http://127.0.0.1:3100";

export { db };

export type ApiResponse = { status: number; headers: Headers; json: any; text: string };

export async function newApiClient(name = "test client") {
  const { client, apiKey } = await createApiClient(`${name} ${randomUUID().slice(0, 8)}`);
  return { id: client.id, apiKey };
}

export function uniqueKey(prefix = "key"): string {
  return `${prefix}-${randomUUID()}`;
}

export function chargeBody(overrides: Record<string, unknown> = {}) {
  return { amount_cents: 1999, currency: "usd", card_token: "tok_visa", customer_id: `cus_${randomUUID().slice(0, 12)}`, ...overrides };
}

export async function postCharge(opts: {
  apiKey?: string;
  key?: string;
  body?: unknown;
  rawBody?: BodyInit;
  headers?: Record<string, string>;
  baseUrl?: string;
}): Promise<ApiResponse> {
  const headers: Record<string, string> = { "Content-Type": "application/json", ...opts.headers };
  if (opts.apiKey) headers.Authorization = `Bearer ${opts.apiKey}`;
  if (opts.key !== undefined) headers["Idempotency-Key"] = opts.key;
  const res = await fetch(`${opts.baseUrl ?? APP_URL}/api/charges`, {
    method: "POST",
    headers,
    body: opts.rawBody ?? JSON.stringify(opts.body ?? chargeBody()),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

let gatewayPool: mariadb.Pool | undefined;
/** The simulated gateway's own records: what was really charged. */
export async function gatewayCharges(customerId: string): Promise<{ id: string; idempotency_key: string }[]> {
  gatewayPool ??= mariadb.createPool({ ...mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!), connectionLimit: 2 });
  return gatewayPool.query("SELECT id, idempotency_key FROM sim_charges WHERE customer_id = ?", [customerId]);
}

export async function localCharges(customerId: string) {
  return db.charge.findMany({ where: { customerId } });
}

export async function closeConnections() {
  await gatewayPool?.end();
  gatewayPool = undefined;
  await disconnectDatabase();
}

/** Counts answers by status (and replays apart). */
export function tally(responses: ApiResponse[]) {
  const counts: Record<string, number> = {};
  for (const r of responses) {
    const label = r.headers.get("idempotent-replay") === "true" ? `${r.status} replay` : String(r.status);
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
}

/** Another instance of the app (the production build), same database and gateway, as the app's own database user. */
export async function startAppInstance(port: number, env: Record<string, string> = {}) {
  const { startApp } = await import("../scripts/lib/processes");
  const appDatabase = process.env.TEST_APP_DATABASE_URL ? { DATABASE_URL: process.env.TEST_APP_DATABASE_URL } : {};
  return startApp({ port, env: { ...process.env, ...appDatabase, ...env }, quiet: true });
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
