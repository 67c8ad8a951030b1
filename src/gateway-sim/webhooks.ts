/**
 * Webhooks as Stripe sends them: endpoints registered with the simulator (table sim_webhook_endpoints) get each
 * PaymentIntent's and refund's outcome once it is final, as an event signed with `Stripe-Signature` (by the official
 * SDK's test-header helper: the same scheme Stripe uses), retried on failure with backoff.
 *
 *   POST   /v1/webhook_endpoints       url, enabled_events[] ("*" for all), secret (the simulator's extension: a
 *                                      deployment whose secret is configured registers it; Stripe makes one)
 *   GET    /v1/webhook_endpoints
 *   DELETE /v1/webhook_endpoints/:id
 *
 * Unlike Stripe, the simulator keeps its pending deliveries in memory: a delivery is lost if the simulator stops.
 * What a lost event costs is time: the app's sweeper settles the operation anyway.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type * as mariadb from "mariadb";
import Stripe from "stripe";
import { parseForm } from "./stripe/params";
import { newId } from "./stripe/paymentIntents";
import { readBody, send, sleep } from "./http";

export const WEBHOOK_ENDPOINTS_TABLE = `CREATE TABLE IF NOT EXISTS sim_webhook_endpoints (
  id VARCHAR(32) NOT NULL PRIMARY KEY,
  url VARCHAR(2048) NOT NULL,
  secret VARCHAR(255) NOT NULL,
  enabled_events JSON NOT NULL,
  created_at DATETIME(6) NOT NULL
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`;

export type GatewayEventType =
  | "payment_intent.succeeded"
  | "payment_intent.payment_failed"
  | "refund.updated"
  | "refund.failed";

type Endpoint = { id: string; url: string; secret: string; enabled_events: string | string[] };

/** Seconds between a failed delivery and the next try (Stripe's own run for days; a test simulator needs less). */
const RETRY_AFTER_S = [1, 2, 4, 8, 15, 30, 60];
const TIMEOUT_MS = 10_000;

const eventsOf = (e: Endpoint): string[] =>
  typeof e.enabled_events === "string" ? (JSON.parse(e.enabled_events) as string[]) : e.enabled_events;

function endpointJson(e: Endpoint) {
  return { id: e.id, object: "webhook_endpoint", url: e.url, enabled_events: eventsOf(e), status: "enabled" };
}

export function webhooksApi(pool: mariadb.Pool) {
  async function endpoints(): Promise<Endpoint[]> {
    return pool.query("SELECT id, url, secret, enabled_events FROM sim_webhook_endpoints ORDER BY created_at");
  }

  /** Posts one event to one endpoint until it answers 2xx or the schedule runs out. */
  async function deliver(endpoint: Endpoint, payload: string) {
    for (let attempt = 0; ; attempt++) {
      try {
        const header = Stripe.webhooks.generateTestHeaderString({ payload, secret: endpoint.secret });
        const res = await fetch(endpoint.url, {
          method: "POST",
          headers: { "Content-Type": "application/json", "Stripe-Signature": header },
          body: payload,
          redirect: "manual",
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
        await res.arrayBuffer();
        if (res.status >= 200 && res.status < 300) return;
      } catch {
        // Unreachable or timed out: tried again below.
      }
      const wait = RETRY_AFTER_S[attempt];
      if (wait === undefined) {
        console.error(`gateway-sim: gave up delivering an event to ${endpoint.url}`);
        return;
      }
      await sleep(wait * 1_000);
    }
  }

  /**
   * Sends `type` about `object` to every endpoint that wants it, once `at` has come (a slow card's charge is made at
   * once but reported when its answer would be). Fire and forget: the caller's request does not wait.
   */
  function announce(type: GatewayEventType, object: Record<string, unknown>, at = new Date()) {
    const run = async () => {
      const wait = at.getTime() - Date.now();
      if (wait > 0) await sleep(wait);
      const event = {
        id: newId("evt"),
        object: "event",
        api_version: "2026-01-28.clover",
        created: Math.floor(Date.now() / 1_000),
        livemode: false,
        pending_webhooks: 1,
        type,
        data: { object },
      };
      const payload = JSON.stringify(event);
      const wanted = (await endpoints()).filter((e) => eventsOf(e).some((t) => t === "*" || t === type));
      await Promise.all(wanted.map((e) => deliver(e, payload)));
    };
    run().catch((error) => console.error("gateway-sim: announcing an event:", error));
  }

  async function handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    if (!url.pathname.startsWith("/v1/webhook_endpoints")) return false;
    const id = /^\/v1\/webhook_endpoints\/([^/]+)$/.exec(url.pathname)?.[1];
    if (req.method === "POST" && !id) {
      const params = parseForm(await readBody(req));
      const target = typeof params.url === "string" ? params.url : "";
      if (!/^https?:\/\//.test(target)) {
        send(res, 400, { error: { type: "invalid_request_error", message: "url must be http(s)", param: "url" } });
        return true;
      }
      const listed = params.enabled_events;
      const events = Array.isArray(listed) ? listed.map(String) : ["*"];
      const given = typeof params.secret === "string" ? params.secret : "";
      const endpoint: Endpoint = {
        id: newId("we"),
        url: target,
        secret: given.startsWith("whsec_") ? given : newId("whsec"),
        enabled_events: events,
      };
      await pool.query(
        "INSERT INTO sim_webhook_endpoints (id, url, secret, enabled_events, created_at) VALUES (?, ?, ?, ?, ?)",
        [endpoint.id, endpoint.url, endpoint.secret, JSON.stringify(events), new Date()],
      );
      send(res, 200, { ...endpointJson(endpoint), secret: endpoint.secret });
    } else if (req.method === "GET" && !id) {
      send(res, 200, { object: "list", data: (await endpoints()).map(endpointJson), has_more: false });
    } else if (req.method === "DELETE" && id) {
      await pool.query("DELETE FROM sim_webhook_endpoints WHERE id = ?", [decodeURIComponent(id)]);
      send(res, 200, { id, object: "webhook_endpoint", deleted: true });
    } else {
      send(res, 404, { error: { type: "invalid_request_error", message: "No such endpoint" } });
    }
    return true;
  }

  return { handle, announce };
}

export type Announce = ReturnType<typeof webhooksApi>["announce"];
