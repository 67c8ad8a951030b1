/**
 * The simulator's Stripe-compatible mode: the part of Stripe's API the Stripe
 * adapter uses, served by the simulator process next to its own protocol.
 *
 *   POST /v1/payment_intents                 create and confirm (form-encoded; Idempotency-Key honoured)
 *   GET  /v1/payment_intents/:id             retrieve (strongly consistent)
 *   GET  /v1/payment_intents/search?query=   search by metadata/status (sees an intent only after the lag)
 *   GET  /v1/payment_intents?created[gte]=   list, newest first, starting_after / ending_before
 *   /v1/refunds                              create, list, retrieve (./refunds.ts)
 *
 * Authentication is Stripe's: `Authorization: Bearer sk_test_...` (any test key).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type * as mariadb from "mariadb";
import {
  apiError,
  authenticationRequired,
  idempotencyKeyInUse,
  idempotencyMismatch,
  invalidApiKey,
  invalidRequest,
  rateLimited,
  resourceMissing,
  StripeHttpError,
} from "./errors";
import { fingerprint, idempotencyStore } from "./idempotency";
import {
  createIntentParams,
  listParams,
  parseForm,
  retrieveParams,
  searchParams,
  type CreateIntent,
  type Params,
} from "./params";
import { cardBehaviour } from "./paymentMethods";
import { intentJson, intentStore, newId, type PaymentError } from "./paymentIntents";
import { isRefundPath, stripeRefunds } from "./refunds";
import { parseSearchQuery } from "./searchQuery";
import type { Announce } from "../webhooks";
import { readBody, sleep } from "../http";

export type StripeApiConfig = {
  /** How long a new intent stays invisible to search (Stripe: "under a minute", longer during an outage). */
  searchLagMs: number;
  /** The simulator's account id (../identity.ts): GET /v1/account. */
  accountId: string;
  /** Sends a webhook event (../webhooks.ts). */
  announce: Announce;
};

type Answer = { status: number; body: string };

const errorAnswer = (error: StripeHttpError): Answer => ({
  status: error.status,
  body: JSON.stringify({ error: error.body }),
});
function authenticate(req: IncomingMessage) {
  const header = req.headers.authorization;
  if (!header) throw authenticationRequired();
  const bearer = /^Bearer (.+)$/.exec(header)?.[1];
  const basic = /^Basic (.+)$/.exec(header)?.[1];
  const key = bearer ?? (basic ? Buffer.from(basic, "base64").toString("utf8").replace(/:$/, "") : "");
  if (!/^(sk|rk)_test_\w+$/.test(key)) throw invalidApiKey(key);
}

export function stripeApi(pool: mariadb.Pool, config: StripeApiConfig) {
  const intents = intentStore(pool);
  const keys = idempotencyStore(pool);
  const refunds = stripeRefunds(pool, config.announce);

  /** Runs a create whose key (if any) this request holds; says whether its answer is saved under the key. */
  async function execute(input: CreateIntent, key: string | null): Promise<{ answer: Answer; save: boolean }> {
    const behaviour = cardBehaviour(input.paymentMethod);
    // Refused before the endpoint executes: nothing saved, a retry is a fresh request.
    if (behaviour.kind === "unknown") throw resourceMissing("PaymentMethod", input.paymentMethod, "payment_method");
    if (behaviour.kind === "rate_limited") throw rateLimited();
    if (behaviour.kind === "error") return { answer: errorAnswer(apiError()), save: true };

    const decline: PaymentError | null =
      behaviour.kind === "decline"
        ? { type: "card_error", code: behaviour.code, decline_code: behaviour.declineCode, message: behaviour.message }
        : null;
    const row = await intents.insert(
      {
        id: newId("pi"),
        idempotency_key: key,
        amount: input.amount,
        currency: input.currency,
        payment_method: input.paymentMethod,
        status: decline ? "requires_payment_method" : "succeeded",
        latest_charge: newId("ch"),
        last_payment_error: decline,
        metadata: input.metadata,
        description: input.description,
        created_at: new Date(),
      },
      (behaviour.kind === "succeed" && behaviour.searchLagMs) || config.searchLagMs,
    );
    // Reported once final: a slow card's answer (and its event) comes when its delay is over.
    const settlesAt = new Date(Date.now() + (behaviour.kind === "succeed" ? behaviour.delayMs : 0));
    config.announce(decline ? "payment_intent.payment_failed" : "payment_intent.succeeded", intentJson(row), settlesAt);
    if (behaviour.kind === "charge_then_error") return { answer: errorAnswer(apiError()), save: true };
    if (decline) {
      const card = new StripeHttpError(402, {
        ...decline,
        charge: row.latest_charge!,
        payment_intent: intentJson(row),
        payment_method: { id: row.payment_method, object: "payment_method", type: "card" },
        doc_url: "https://docs.stripe.com/error-codes/card-declined",
      });
      return { answer: errorAnswer(card), save: true };
    }
    // The money has moved; the answer is slow (and the key stays in flight meanwhile).
    if (behaviour.kind === "succeed" && behaviour.delayMs > 0) await sleep(behaviour.delayMs);
    return { answer: { status: 200, body: JSON.stringify(intentJson(row, input.expand)) }, save: true };
  }

  /** A POST under Stripe's idempotency: `run` executes it for a key this request holds (or for no key). */
  async function idempotentPost(
    req: IncomingMessage,
    requestId: string,
    run: (params: Params, key: string | null) => Promise<{ answer: Answer; save: boolean }>,
    endpoint: string,
  ): Promise<Answer & { replayed?: boolean; requestId?: string }> {
    const type = req.headers["content-type"] ?? "";
    if (!type.startsWith("application/x-www-form-urlencoded")) {
      throw invalidRequest("Requests must be form-encoded (Content-Type: application/x-www-form-urlencoded).");
    }
    const params = parseForm(await readBody(req));
    const key = req.headers["idempotency-key"];
    if (key === undefined) return (await run(params, null)).answer;
    if (typeof key !== "string" || key.length === 0 || key.length > 255) {
      throw invalidRequest("Idempotency-Key must be 1-255 characters.", { param: "Idempotency-Key" });
    }
    const claim = await keys.claim(key, fingerprint(endpoint, params), requestId);
    if (claim.kind === "mismatch") throw idempotencyMismatch(key);
    if (claim.kind === "in_flight") throw idempotencyKeyInUse(key);
    if (claim.kind === "replay") return { ...claim.saved, replayed: true };
    try {
      const { answer, save } = await run(params, key);
      await (save ? keys.save(key, answer) : keys.release(key));
      return answer;
    } catch (error) {
      await keys.release(key);
      throw error;
    }
  }

  async function route(req: IncomingMessage, url: URL, requestId: string) {
    const query = parseForm(url.search.slice(1)) as Params;
    const id = /^\/v1\/payment_intents\/([^/]+)$/.exec(url.pathname)?.[1];
    if (req.method === "POST" && url.pathname === "/v1/payment_intents") {
      const run = (params: Params, key: string | null) => execute(createIntentParams(params), key);
      return idempotentPost(req, requestId, run, "POST /v1/payment_intents");
    }
    if (isRefundPath(url)) {
      const refundId = /^\/v1\/refunds\/([^/]+)$/.exec(url.pathname)?.[1];
      if (req.method === "POST" && !refundId) return idempotentPost(req, requestId, refunds.create, "POST /v1/refunds");
      if (req.method === "GET" && !refundId) return refunds.list(query);
      if (req.method === "GET" && refundId) return refunds.retrieve(decodeURIComponent(refundId));
    }
    if (req.method === "GET" && url.pathname === "/v1/account") {
      return { status: 200, body: JSON.stringify({ id: config.accountId, object: "account" }) };
    }
    if (req.method === "GET" && url.pathname === "/v1/payment_intents") {
      const { expand, ...opts } = listParams(query);
      const { page, hasMore } = await intents.list(opts);
      const data = page.map((row) => intentJson(row, expand));
      return {
        status: 200,
        body: JSON.stringify({ object: "list", url: "/v1/payment_intents", has_more: hasMore, data }),
      };
    }
    if (req.method === "GET" && id === "search") {
      const { query: q, expand, ...opts } = searchParams(query);
      const { page, nextPage } = await intents.search(parseSearchQuery(q), opts);
      const body = {
        object: "search_result",
        url: "/v1/payment_intents/search",
        has_more: nextPage !== null,
        next_page: nextPage,
        data: page.map((row) => intentJson(row, expand)),
      };
      return { status: 200, body: JSON.stringify(body) };
    }
    if (req.method === "GET" && id) {
      const { expand } = retrieveParams(query);
      return {
        status: 200,
        body: JSON.stringify(intentJson(await intents.find(decodeURIComponent(id), "id"), expand)),
      };
    }
    throw new StripeHttpError(404, {
      type: "invalid_request_error",
      message: `Unrecognized request URL (${req.method}: ${url.pathname}).`,
    });
  }

  /**
   * Answers a request under /v1/payment_intents, and under /v1/refunds when it is authenticated as Stripe's
   * requests are (the simulator's own refunds share the path, never with an Authorization header); false for
   * any other.
   */
  return async function handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const mine =
      url.pathname.startsWith("/v1/payment_intents") ||
      url.pathname === "/v1/account" ||
      (isRefundPath(url) && !!req.headers.authorization);
    if (!mine) return false;
    const requestId = newId("req").slice(0, 18);
    let answer: Answer & { replayed?: boolean; requestId?: string };
    try {
      authenticate(req);
      answer = await route(req, url, requestId);
    } catch (error) {
      if (!(error instanceof StripeHttpError)) throw error;
      answer = errorAnswer(error);
    }
    const key = req.method === "POST" ? req.headers["idempotency-key"] : undefined;
    res.writeHead(answer.status, {
      "Content-Type": "application/json",
      "Request-Id": answer.requestId ?? requestId,
      "Stripe-Version": req.headers["stripe-version"] ?? "simulated",
      ...(typeof key === "string" && { "Idempotency-Key": key }),
      ...(answer.replayed && { "Idempotent-Replayed": "true" }),
    });
    res.end(answer.body);
    return true;
  };
}
