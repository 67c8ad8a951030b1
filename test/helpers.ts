import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as mariadb from "mariadb";
import { env } from "~/env";
import type { FinishedBy } from "~/generated/prisma/client";
import { chargesOfCustomer, refundsOfCharge, removeCharges } from "~/gateway-sim/inspect";
import { createApiClient } from "~/server/auth/apiClients";
import { CHARGES_ROUTE } from "~/server/charges/chargeOperation";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { db, disconnectDatabase } from "~/server/db";
import { deriveGatewayKey, gateway, metadataFor, type GatewayCharge } from "~/server/gateway";
import { requestHash, type HeldClaim, type IdempotencyRecord, type WorkResult } from "~/server/idempotency";
import { decodeRecord, keyToBytes, type PhaseName } from "~/server/idempotency/reading";
import { REFUNDS_ROUTE } from "~/server/refunds/refundOperation";
import { abandonedRefundResponse } from "~/server/refunds/responses";

export const APP_URL = process.env.TEST_APP_URL ?? "http://127.0.0.1:3100";

export { db };

/** The run's METRICS_TOKEN as a request's credential: GET /api/metrics, and /api/health's details. */
export const withMetricsCredential = { headers: { Authorization: `Bearer ${process.env.METRICS_TOKEN}` } };

export type ApiResponse = { status: number; headers: Headers; json: any; text: string };

/** An answer in the documented error format, with this status and code. */
export function assertError(res: { status: number; json: any; text: string }, status: number, code: string) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.json?.error?.code, code, res.text);
  assert.equal(typeof res.json.error.message, "string");
}

export async function newApiClient(name = "test client") {
  const { client, apiKey } = await createApiClient(`${name} ${randomUUID().slice(0, 8)}`);
  return { id: client.id, apiKey };
}

export function uniqueKey(prefix = "key"): string {
  return `${prefix}-${randomUUID()}`;
}

export function chargeBody(overrides: Record<string, unknown> = {}) {
  return {
    amount_cents: 1999,
    currency: "usd",
    card_token: "tok_visa",
    customer_id: `cus_${randomUUID().slice(0, 12)}`,
    ...overrides,
  };
}

type PostOptions = {
  apiKey?: string;
  key?: string;
  body?: unknown;
  rawBody?: BodyInit;
  headers?: Record<string, string>;
  baseUrl?: string;
  signal?: AbortSignal;
};

export function postCharge(opts: PostOptions): Promise<ApiResponse> {
  return postTo("/api/charges", { ...opts, body: opts.body ?? chargeBody() });
}

export function postRefund(opts: PostOptions): Promise<ApiResponse> {
  return postTo("/api/refunds", opts);
}

/** A POST to a money route (or any path), as a client sends it. */
export async function postTo(path: string, opts: PostOptions): Promise<ApiResponse> {
  const headers: Record<string, string> = { "Content-Type": "application/json", ...opts.headers };
  if (opts.apiKey) headers.Authorization = `Bearer ${opts.apiKey}`;
  if (opts.key !== undefined) headers["Idempotency-Key"] = opts.key;
  const res = await fetch(`${opts.baseUrl ?? APP_URL}${path}`, {
    method: "POST",
    headers,
    body: opts.rawBody ?? JSON.stringify(opts.body ?? {}),
    signal: opts.signal,
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
function gatewayDb() {
  gatewayPool ??= mariadb.createPool({
    ...mysqlConnectionOptions(process.env.TEST_GATEWAY_DATABASE_URL!),
    connectionLimit: 2,
  });
  return gatewayPool;
}

/** The simulated gateway's own records (of whichever protocol GATEWAY uses): what was really charged. */
export async function gatewayCharges(customerId: string): Promise<{ id: string; idempotency_key: string }[]> {
  return chargesOfCustomer(gatewayDb(), env.GATEWAY, customerId);
}

/** Takes charges out of the simulator's books (tests that planted charges the app never made, to undo them). */
export async function removeGatewayCharges(ids: string[]): Promise<void> {
  await removeCharges(gatewayDb(), env.GATEWAY, ids);
}

/**
 * Until the gateway's lookup (what the sweeper asks) sees the charge made for
 * this record. Stripe's search lags behind its writes; a test that makes a
 * charge "in the past" must let the lag pass, as real time would have.
 */
export async function untilGatewayShowsCharge(record: IdempotencyRecord) {
  const { id, apiClientId, idempotencyKey } = record;
  const metadata = { requestId: String(id), apiClientId: String(apiClientId), idempotencyKey };
  const lookup = { idempotencyKey: deriveGatewayKey(record), metadata, lastAttemptAt: new Date() };
  const shows = async () => (await gateway.findCharge(lookup)).kind === "charged";
  await waitFor("the gateway's lookup to show the charge", shows);
}

/** A succeeded charge of this client (its id), made through the API; `card_token` picks its refunds' behaviour. */
export async function newCharge(apiKey: string, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await postCharge({ apiKey, key: uniqueKey("charge"), body: chargeBody(overrides) });
  assert.equal(res.status, 201, res.text);
  return res.json.id as string;
}

/** The refunds the gateway made of one of the app's charges: what really moved back. */
export async function gatewayRefunds(chargeId: string) {
  const charge = await db.charge.findUniqueOrThrow({ where: { id: chargeId } });
  return refundsOfCharge(gatewayDb(), charge.gatewayChargeId);
}

/** What the app and the gateway say was refunded of a charge. */
export async function refundedOf(chargeId: string) {
  const charge = await db.charge.findUniqueOrThrow({ where: { id: chargeId } });
  const app = await db.refund.findMany({ where: { chargeId } });
  const gateway = await gatewayRefunds(chargeId);
  return {
    charged: charge.amountCents,
    refunded: charge.amountRefundedCents,
    held: charge.refundHeldCents,
    appSum: app.reduce((s, r) => s + r.amountCents, 0),
    gatewaySum: gateway.reduce((s, r) => s + r.amount, 0),
    appCount: app.length,
    gatewayCount: gateway.length,
  };
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

/**
 * A client's loop: `ask` every `everyMs` until an answer that is not "retry later" (its body's `retryable`), and
 * how many requests that took; fails past `timeoutMs`, a hang guard.
 */
export async function untilFinal(ask: () => Promise<ApiResponse>, { everyMs = 250, timeoutMs = 60_000 } = {}) {
  const giveUpAt = Date.now() + timeoutMs;
  let requests = 0;
  for (;;) {
    const res = await ask();
    requests += 1;
    if (res.status < 400 || res.json?.error?.retryable === false) return { res, requests };
    assert.ok(Date.now() < giveUpAt, `still ${res.status} ${res.json?.error?.code} after ${requests} requests`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The record of a key on the charges route, decoded by the lifecycle module (undefined if there is none). */
export async function recordOf(key: string, route = CHARGES_ROUTE): Promise<IdempotencyRecord | undefined> {
  const row = await db.idempotentRequest.findUnique({
    where: { idempotencyKey_route: { idempotencyKey: keyToBytes(key), route } },
  });
  return row ? decodeRecord(row) : undefined;
}

export const recordsWithKey = (key: string) =>
  db.idempotentRequest.count({ where: { idempotencyKey: keyToBytes(key) } });

const MINUTE = 60_000;

/**
 * A record in a given phase and age, as a process (or a crash) would have left
 * it: `held` (lease still running), `lease_expired` (its holder is gone),
 * `released` (outcome unknown) or `complete` (finished by `finishedBy`).
 */
export async function seedRecord(opts: {
  apiClientId: number;
  phase: PhaseName;
  body?: unknown;
  key?: string | null;
  route?: string;
  ageMs?: number;
  attempt?: number;
  finishedBy?: FinishedBy;
  response?: { status: number; body: string };
  expiresAt?: Date;
}): Promise<IdempotencyRecord> {
  const now = Date.now();
  const past = new Date(now - (opts.ageMs ?? 10 * MINUTE));
  const key = opts.key === undefined ? uniqueKey("seeded") : opts.key;
  const complete = opts.phase === "complete";
  const row = await db.idempotentRequest.create({
    data: {
      idempotencyKey: key === null ? null : keyToBytes(key),
      route: opts.route ?? CHARGES_ROUTE,
      apiClientId: opts.apiClientId,
      requestHash: requestHash(opts.body ?? {}),
      state: complete ? "complete" : "in_progress",
      attempt: opts.attempt ?? 1,
      leaseExpiresAt:
        opts.phase === "held"
          ? new Date(now + 5 * MINUTE)
          : opts.phase === "lease_expired"
            ? new Date(now - 1_000)
            : null,
      responseStatus: complete ? (opts.response?.status ?? 201) : null,
      responseBody: complete ? (opts.response?.body ?? "{}") : null,
      finishedBy: complete ? (opts.finishedBy ?? "request") : null,
      lastAttemptAt: past,
      createdAt: past,
      updatedAt: past,
      expiresAt: opts.expiresAt ?? new Date(now + 24 * 60 * MINUTE),
    },
  });
  return decodeRecord(row);
}

/** Charges at the gateway under the record's derived key, as its (dead) holder had done. */
export async function chargeAtGateway(
  record: IdempotencyRecord,
  body: ReturnType<typeof chargeBody>,
): Promise<GatewayCharge> {
  return gateway.charge(
    {
      amountCents: body.amount_cents,
      currency: body.currency,
      cardToken: body.card_token,
      customerId: body.customer_id,
      metadata: {
        requestId: String(record.id),
        apiClientId: String(record.apiClientId),
        idempotencyKey: record.idempotencyKey,
      },
    },
    { idempotencyKey: deriveGatewayKey(record), timeoutMs: 5_000 },
  );
}

/**
 * Sweeps (finishing anything idle, however young) until `done` holds. A gateway
 * whose lookup lags answers "unproven" for a while; the sweep then waits and
 * asks again, as the background sweeper would.
 */
export async function sweepUntil(what: string, done: () => Promise<boolean>, timeoutMs = 15_000) {
  const { reapAbandoned } = await import("~/server/sweep/reapAbandoned");
  await waitFor(
    what,
    async () => {
      await reapAbandoned({ olderThanMs: 0 });
      return done();
    },
    timeoutMs,
  );
}

/** GET /api/metrics, with the token when given (`Bearer ...`). */
export async function scrapeMetrics(authorization?: string) {
  const res = await fetch(`${APP_URL}/api/metrics`, { headers: authorization ? { Authorization: authorization } : {} });
  return { status: res.status, type: res.headers.get("content-type") ?? "", text: await res.text() };
}

/** The value of one sample (`name{labels} value`), 0 when absent; labels match as a subset. */
export function metricSample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const pairs = [...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)];
    const own = Object.fromEntries(pairs.map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => own[k] === v)) return Number(match[3]);
  }
  return 0;
}

/**
 * A refund operation the sweeper wrote off ("no refund was made", its hold given back), then refunded at the
 * gateway under its own key: a request held up past its write-off (Stripe has no deadline to refuse it by). Of a
 * new charge of `chargeCents`, made through the API.
 */
export async function lateRefund(opts: {
  apiKey: string;
  apiClientId: number;
  chargeCents: number;
  amountCents: number;
}) {
  const made = await postCharge({
    apiKey: opts.apiKey,
    key: uniqueKey(),
    body: chargeBody({ amount_cents: opts.chargeCents }),
  });
  const charge = await db.charge.findUniqueOrThrow({ where: { id: (made.json as { id: string }).id } });
  const body = { charge: charge.id, amount_cents: opts.amountCents, reason: "duplicate" };
  const record = await seedRecord({
    apiClientId: opts.apiClientId,
    route: REFUNDS_ROUTE,
    phase: "complete",
    body,
    ageMs: 5_000,
    finishedBy: "abandoned",
    response: abandonedRefundResponse,
  });
  await db.idempotentRequest.update({ where: { id: record.id }, data: { requestFields: JSON.stringify(body) } });
  const late = await gateway.refund(
    { chargeId: charge.gatewayChargeId, amountCents: opts.amountCents, metadata: metadataFor(record) },
    { idempotencyKey: deriveGatewayKey(record), timeoutMs: 5_000 },
  );
  // Stripe's `created` is whole seconds: the refund is in the next reconciliation's window.
  await new Promise((r) => setTimeout(r, env.GATEWAY === "stripe" ? 1_500 : 0));
  return { charge, record, late };
}

/**
 * Work for runIdempotent in tests of the protocol itself: `work` as given, and a `settle` that never learns
 * anything (these tests' records are young: no retry of theirs is past the attempt window, where settle runs).
 */
export const onlyWork = (work: (held: HeldClaim) => Promise<WorkResult>) => ({
  work,
  settle: async (): Promise<WorkResult> => ({ kind: "unknown" }),
});
