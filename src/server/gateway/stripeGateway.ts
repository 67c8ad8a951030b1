import Stripe from "stripe";
import { stripePaymentMethod } from "./stripeTestCards";
import {
  GatewayOutcomeUnknownError,
  GatewayRefusedError,
  type GatewayRefund,
  type GatewayRefundRequest,
  type ListedGatewayRefund,
  type RefundLookup,
  type ChargeListWindow,
  type ChargeMetadata,
  type ChargeOptions,
  type GatewayCharge,
  type GatewayChargeRequest,
  type GatewayLookup,
  type ListedGatewayCharge,
  type PaymentGateway,
} from "./types";

/**
 * Stripe through its official SDK. A charge is a PaymentIntent created and
 * confirmed in one call, sent with the derived gateway key as Stripe's
 * Idempotency-Key and the operation's ids in `metadata`. docs/stripe.md explains
 * the choices; in short:
 *
 * - The SDK's own retries are off (`maxNetworkRetries: 0`). The app already
 *   retries (the client, with the same operation key, and this adapter on a 409),
 *   and SDK retries would stretch one call past `timeoutMs`, the bound the
 *   sweeper's REAP_AFTER_MS relies on. The one retry the SDK still makes (a
 *   connection closed under it) reuses our Idempotency-Key, so it cannot charge twice.
 * - Stripe answers 409 while another request with the key is executing: the
 *   adapter waits and asks again with the same key until `timeoutMs` is spent.
 * - Stripe has no lookup by idempotency key. Inside `searchConsistencyMs` of
 *   the operation's first attempt the adapter reads the list (strongly
 *   consistent) of the intents created since then, filtered on the metadata;
 *   after it, it searches by the metadata (search lags behind writes, and has
 *   long caught up). A miss is only a proof once the last attempt is older than
 *   `searchConsistencyMs` (a request may still be on its way); before that it is
 *   `unproven`.
 * - A retry whose create Stripe answers with a saved error (a 500 replayed to
 *   every request under the key) learns what the first request did from that
 *   list read, not from the error: a charge made before the 500 is found at once.
 */
export type StripeGatewayOptions = {
  secretKey: string;
  /** Where the API is (tests: the simulator); unset means api.stripe.com. */
  apiBase?: string;
  /**
   * How long after the last attempt a search miss still proves nothing, and a request sent may still land (Stripe
   * cannot be told a deadline): "nothing was made" waits it out, for charges and refunds alike.
   */
  searchConsistencyMs: number;
  /** Timeout of one lookup or list call. */
  lookupTimeoutMs?: number;
};

/** Metadata keys on every PaymentIntent the app makes. */
const META = {
  requestId: "request_id",
  apiClientId: "api_client_id",
  idempotencyKey: "idempotency_key",
  /** The derived gateway key: what `findCharge` searches for and `listCharges` reports. */
  gatewayKey: "gateway_key",
  /** The client's own customer reference (not a Stripe Customer). */
  customerId: "customer_id",
} as const;

/** Stripe's invalid_request_error codes that refuse this payment for good (no money moved), as a decline would. */
const REFUSALS = new Set(["amount_too_small", "amount_too_large", "resource_missing"]);

const IN_FLIGHT_RETRY_MS = [250, 500, 1_000];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A search value in Stripe's query language: quoted, quotes and backslashes escaped. */
const quote = (value: string) => `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;

function metadataFor(request: GatewayChargeRequest, gatewayKey: string): Record<string, string> {
  const m = request.metadata;
  return {
    [META.requestId]: m.requestId,
    [META.apiClientId]: m.apiClientId,
    ...(m.idempotencyKey !== null && { [META.idempotencyKey]: m.idempotencyKey }),
    [META.gatewayKey]: gatewayKey,
    ...(request.customerId !== null && { [META.customerId]: request.customerId }),
  };
}

function chargeMetadata(metadata: Stripe.Metadata): ChargeMetadata | null {
  const requestId = metadata[META.requestId];
  const apiClientId = metadata[META.apiClientId];
  if (requestId === undefined || apiClientId === undefined) return null; // not made by this app
  return { requestId, apiClientId, idempotencyKey: metadata[META.idempotencyKey] ?? null };
}

/**
 * A PaymentIntent as the app's charge: succeeded, or declined when it ended
 * without moving money. Undefined while money may still move (processing).
 */
function fromIntent(intent: Stripe.PaymentIntent): GatewayCharge | undefined {
  const base = {
    id: intent.id,
    amountCents: intent.amount,
    currency: intent.currency,
    customerId: intent.metadata[META.customerId] ?? null,
  };
  switch (intent.status) {
    case "succeeded":
      return { ...base, status: "succeeded", declineCode: null, message: null };
    case "requires_payment_method": // the confirmation failed
    case "canceled":
    case "requires_action": // 3-D Secure; no customer is there to complete it
    case "requires_confirmation": {
      const error = intent.last_payment_error;
      const code =
        error?.decline_code ??
        error?.code ??
        (intent.status === "requires_action" ? "authentication_required" : intent.status);
      return { ...base, status: "declined", declineCode: code, message: error?.message ?? null };
    }
    default: // processing, requires_capture: not final
      return undefined;
  }
}

/**
 * How much earlier than the operation's first attempt (our clock) Stripe's `created` (its clock, whole seconds)
 * may date one of its intents: the list read's window starts this much before it.
 */
const CREATED_SKEW_MS = 60_000;
const LIST_PAGE = 100;

/** Stripe's answer to this request is the one it saved for the key: the first request with it finished executing. */
const isReplayed = (error: unknown) =>
  error instanceof Stripe.errors.StripeError && error.headers?.["idempotent-replayed"] === "true";

/**
 * The operation's intents as a lookup: the one that moved money if any, else the decline; undefined when there
 * are none. (One intent per key is all Stripe's idempotency allows; were there more, the one that moved money
 * matters.)
 */
function lookupOf(intents: Stripe.PaymentIntent[]): GatewayLookup | undefined {
  const charges = intents.map(fromIntent);
  if (charges.some((c) => c === undefined)) {
    return { kind: "unproven", reason: "a PaymentIntent under this key is processing" };
  }
  const charge = charges.find((c) => c!.status === "succeeded") ?? charges[0];
  return charge && { kind: "charged", charge };
}

/** Intents made under the gateway key; one that names another record under it is an error, never a charge. */
function underKey(intents: Stripe.PaymentIntent[], gatewayKey: string, requestId: string) {
  const mine = intents.filter((i) => i.metadata[META.gatewayKey] === gatewayKey);
  for (const intent of mine) {
    // An empty requestId: the asker no longer knows the record (pruned); the key alone names the charge.
    if (requestId !== "" && intent.metadata[META.requestId] !== requestId) {
      const owner = intent.metadata[META.requestId];
      throw new Error(`PaymentIntent ${intent.id} has gateway key ${gatewayKey} but belongs to request ${owner}`);
    }
  }
  return mine;
}

/** How long Stripe remembers an idempotency key, and how much sooner than that the adapter stops trusting it. */
const STRIPE_KEY_LIFETIME_MS = 24 * 3_600_000;
const KEY_LIFETIME_MARGIN_MS = 3_600_000;

/**
 * A listed PaymentIntent as a charge; undefined for one that is not final yet (processing, or another
 * integration's requires_capture on the same account): it moved no money the ledger can compare yet, and one
 * such intent must not keep the rest of its window from being reconciled. The app's own come back final on a
 * later run.
 */
function toListed(intent: Stripe.PaymentIntent): ListedGatewayCharge | undefined {
  const charge = fromIntent(intent);
  if (!charge) return undefined;
  return {
    ...charge,
    idempotencyKey: intent.metadata[META.gatewayKey] ?? "",
    createdAt: new Date(intent.created * 1000),
    metadata: chargeMetadata(intent.metadata),
  };
}

/** The definite "no" hidden in a Stripe error, as a declined charge; undefined when the outcome is not known. */
function declineFrom(error: unknown, request: GatewayChargeRequest): GatewayCharge | undefined {
  if (!(error instanceof Stripe.errors.StripeError)) return undefined;
  const raw = error.raw as { message?: string; payment_intent?: Stripe.PaymentIntent };
  const refused =
    error.type === "StripeCardError" ||
    (error.type === "StripeInvalidRequestError" && REFUSALS.has(error.code ?? "") && error.param !== "id");
  if (!refused) return undefined;
  // A card error carries the failed PaymentIntent; a refusal before one was made
  // has only Stripe's request id to name it.
  const id = raw.payment_intent?.id ?? error.requestId;
  if (!id) return undefined;
  const declineCode =
    error.code === "resource_missing" ? "invalid_token" : (error.decline_code ?? error.code ?? "card_declined");
  return {
    id,
    status: "declined",
    amountCents: request.amountCents,
    currency: request.currency,
    customerId: request.customerId,
    declineCode,
    message: raw.message ?? null,
  };
}

/** Stripe's codes that refuse a refund for good: nothing was refunded. */
const REFUND_REFUSALS = new Set(["charge_already_refunded", "amount_too_large", "resource_missing"]);

function refundOf(refund: Stripe.Refund): GatewayRefund {
  const chargeId =
    typeof refund.payment_intent === "string" ? refund.payment_intent : (refund.payment_intent?.id ?? "");
  return { id: refund.id, chargeId, amountCents: refund.amount, currency: refund.currency };
}

function listedRefund(refund: Stripe.Refund): ListedGatewayRefund {
  const metadata = refund.metadata ?? {};
  return {
    ...refundOf(refund),
    idempotencyKey: metadata[META.gatewayKey] ?? "",
    createdAt: new Date(refund.created * 1000),
    metadata: chargeMetadata(metadata),
  };
}

/** 409: another request with this key is executing (idempotency_key_in_use), or the object is locked. */
const isInFlight = (error: unknown) => error instanceof Stripe.errors.StripeError && error.statusCode === 409;

function unknownOutcome(error: unknown): GatewayOutcomeUnknownError {
  if (error instanceof GatewayOutcomeUnknownError) return error;
  if (error instanceof Stripe.errors.StripeError) {
    // An idempotency_error means this key was first sent with other parameters:
    // that first request may have charged, so this is no proof of anything.
    const what =
      error.type === "StripeIdempotencyError" ? "idempotency_error (key used with other parameters)" : error.type;
    return new GatewayOutcomeUnknownError(`stripe: ${what} ${error.statusCode ?? ""}: ${error.message}`, {
      cause: error,
    });
  }
  return new GatewayOutcomeUnknownError(`stripe: ${String(error)}`, { cause: error });
}

/** Rejects at the deadline whatever the SDK is doing (its socket timeout is an idle timeout, not a total one). */
function beforeDeadline<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new GatewayOutcomeUnknownError("stripe: no answer before the timeout")),
      deadline - Date.now(),
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export class StripePaymentGateway implements PaymentGateway {
  private readonly stripe: Stripe;
  private readonly lookupTimeoutMs: number;
  /** Stripe cannot be told a deadline: a request may land, or its search lag, this long after one. */
  readonly lateLandingMs: number;

  constructor(private readonly options: StripeGatewayOptions) {
    const base = options.apiBase ? new URL(options.apiBase) : undefined;
    const protocol = base?.protocol === "http:" ? "http" : "https";
    this.stripe = new Stripe(options.secretKey, {
      maxNetworkRetries: 0,
      telemetry: false,
      appInfo: { name: "charges" },
      ...(base && { host: base.hostname, port: Number(base.port || (protocol === "http" ? 80 : 443)), protocol }),
    });
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? 10_000;
    this.lateLandingMs = options.searchConsistencyMs;
  }

  /** The account the secret key belongs to (GET /v1/account). */
  async identity(): Promise<string> {
    return (await this.stripe.accounts.retrieve(null, {}, { timeout: this.lookupTimeoutMs })).id;
  }

  async charge(request: GatewayChargeRequest, { idempotencyKey, timeoutMs, firstAttemptAt }: ChargeOptions) {
    const deadline = Date.now() + timeoutMs;
    // Stripe keeps an idempotency key for 24 hours. A retry of an operation first tried longer ago than that
    // would be a new PaymentIntent under the forgotten key: find the one it may have made first (the search
    // has long caught up with it by then).
    if (firstAttemptAt && Date.now() - firstAttemptAt.getTime() > STRIPE_KEY_LIFETIME_MS - KEY_LIFETIME_MARGIN_MS) {
      const earlier = await this.findCharge({ idempotencyKey, metadata: request.metadata, lastAttemptAt: new Date(0) });
      if (earlier.kind === "charged") return earlier.charge;
    }
    // The same parameters on every call with this key, or Stripe answers idempotency_error.
    const params: Stripe.PaymentIntentCreateParams = {
      amount: request.amountCents,
      currency: request.currency,
      payment_method: stripePaymentMethod(request.cardToken),
      allowed_payment_method_types: ["card"],
      confirm: true,
      // A card that wants 3-D Secure fails now (a card error) instead of waiting for a customer who is not there.
      error_on_requires_action: true,
      metadata: metadataFor(request, idempotencyKey),
    };
    for (let attempt = 0; ; attempt++) {
      try {
        const timeout = Math.max(1, deadline - Date.now());
        const intent = await beforeDeadline(
          this.stripe.paymentIntents.create(params, { idempotencyKey, timeout, maxNetworkRetries: 0 }),
          deadline,
        );
        const charge = fromIntent(intent);
        if (!charge) throw new GatewayOutcomeUnknownError(`stripe: PaymentIntent ${intent.id} is ${intent.status}`);
        return charge;
      } catch (error) {
        const declined = declineFrom(error, request);
        if (declined) return declined;
        const wait = IN_FLIGHT_RETRY_MS[Math.min(attempt, IN_FLIGHT_RETRY_MS.length - 1)]!;
        if (isInFlight(error) && Date.now() + wait < deadline) {
          await sleep(wait);
          continue;
        }
        if (isReplayed(error) && firstAttemptAt) {
          const settled = await this.settleReplayedError(idempotencyKey, request, firstAttemptAt, deadline);
          if (settled) return settled;
        }
        throw unknownOutcome(error);
      }
    }
  }

  /**
   * A create answered with the error Stripe saved for the key (a 500 after the money moved, replayed to every
   * retry): the first request has finished, so what it made is in the list by now. The final charge it made,
   * or undefined (nothing under the key, or still processing: unknown, as before). A read that fails or runs out
   * of time is an unknown outcome that says so.
   */
  private async settleReplayedError(
    gatewayKey: string,
    request: GatewayChargeRequest,
    firstAttemptAt: Date,
    deadline: number,
  ): Promise<GatewayCharge | undefined> {
    if (deadline - Date.now() < 1) return undefined;
    let intents: Stripe.PaymentIntent[];
    try {
      intents = await beforeDeadline(
        this.listedUnder(gatewayKey, request.metadata.requestId, firstAttemptAt, deadline),
        deadline,
      );
    } catch (error) {
      throw new GatewayOutcomeUnknownError(`stripe: a replayed error, and the list read failed: ${String(error)}`, {
        cause: error,
      });
    }
    const found = lookupOf(intents);
    return found?.kind === "charged" ? found.charge : undefined;
  }

  /**
   * The intents under the gateway key among those created since `since` (less the clock skew), from the list,
   * which is strongly consistent: an intent is in it the moment it exists (search lags). Newest first, every
   * page of the window: about N/100 requests for N intents, so it is kept to young operations.
   */
  private async listedUnder(gatewayKey: string, requestId: string, since: Date, deadline?: number) {
    const created = { gte: Math.floor((since.getTime() - CREATED_SKEW_MS) / 1000) };
    const found: Stripe.PaymentIntent[] = [];
    let startingAfter: string | undefined;
    for (;;) {
      const timeout = Math.max(1, Math.min(this.lookupTimeoutMs, (deadline ?? Infinity) - Date.now()));
      const page = await this.stripe.paymentIntents.list(
        { created, limit: LIST_PAGE, ...(startingAfter && { starting_after: startingAfter }) },
        { timeout },
      );
      found.push(...underKey(page.data, gatewayKey, requestId));
      if (!page.has_more || page.data.length === 0) return found;
      startingAfter = page.data.at(-1)!.id;
    }
  }

  /** Searches by the gateway key in the metadata, then reads each hit itself (a search hit may show an old status). */
  private async searchedUnder(gatewayKey: string, requestId: string) {
    const options = { timeout: this.lookupTimeoutMs };
    const query = `metadata[${quote(META.gatewayKey)}]:${quote(gatewayKey)}`;
    const hits = await this.stripe.paymentIntents.search({ query, limit: 10 }, options);
    const intents = await Promise.all(hits.data.map((hit) => this.stripe.paymentIntents.retrieve(hit.id, {}, options)));
    return underKey(intents, gatewayKey, requestId);
  }

  /**
   * A Refund of the PaymentIntent, under the derived key, with the operation's ids in its metadata. A refund
   * that Stripe leaves `pending` has been accepted (the money is on its way back); `failed` or `canceled` moved
   * nothing.
   */
  async refund(request: GatewayRefundRequest, { idempotencyKey, timeoutMs }: ChargeOptions) {
    const deadline = Date.now() + timeoutMs;
    const m = request.metadata;
    const params: Stripe.RefundCreateParams = {
      payment_intent: request.chargeId,
      amount: request.amountCents,
      metadata: {
        [META.requestId]: m.requestId,
        [META.apiClientId]: m.apiClientId,
        ...(m.idempotencyKey !== null && { [META.idempotencyKey]: m.idempotencyKey }),
        [META.gatewayKey]: idempotencyKey,
      },
    };
    for (let attempt = 0; ; attempt++) {
      try {
        const timeout = Math.max(1, deadline - Date.now());
        const refund = await beforeDeadline(
          this.stripe.refunds.create(params, { idempotencyKey, timeout, maxNetworkRetries: 0 }),
          deadline,
        );
        if (refund.status === "failed" || refund.status === "canceled") {
          throw new GatewayRefusedError(
            refund.failure_reason ?? refund.status,
            `stripe: refund ${refund.id} ${refund.status}`,
          );
        }
        return refundOf(refund);
      } catch (error) {
        if (error instanceof GatewayRefusedError) throw error;
        if (
          error instanceof Stripe.errors.StripeInvalidRequestError &&
          REFUND_REFUSALS.has(error.code ?? "") &&
          error.param !== "id"
        ) {
          throw new GatewayRefusedError(error.code!, `stripe: ${error.message}`);
        }
        const wait = IN_FLIGHT_RETRY_MS[Math.min(attempt, IN_FLIGHT_RETRY_MS.length - 1)]!;
        if (isInFlight(error) && Date.now() + wait < deadline) {
          await sleep(wait);
          continue;
        }
        throw unknownOutcome(error);
      }
    }
  }

  /** The PaymentIntent's refunds, listed (Stripe's list is strongly consistent: a miss is a proof). */
  async findRefund({ idempotencyKey, chargeId }: { idempotencyKey: string; chargeId: string }): Promise<RefundLookup> {
    const options = { timeout: this.lookupTimeoutMs };
    for await (const refund of this.stripe.refunds.list({ payment_intent: chargeId, limit: 100 }, options)) {
      if (refund.metadata?.[META.gatewayKey] !== idempotencyKey) continue;
      if (refund.status === "failed" || refund.status === "canceled") continue;
      return { kind: "refunded", refund: refundOf(refund) };
    }
    return { kind: "not_refunded" };
  }

  /**
   * The Refunds created in [since, until), oldest first, in one page: walked newest first through the window
   * (whole seconds, widened as listCharges does) and turned round. A window is minutes of refunds.
   */
  async listRefunds({ since, until }: ChargeListWindow) {
    const options = { timeout: this.lookupTimeoutMs };
    const created = { gte: Math.floor(since.getTime() / 1000), lt: Math.ceil(until.getTime() / 1000) };
    const refunds: ListedGatewayRefund[] = [];
    for await (const refund of this.stripe.refunds.list({ created, limit: 100 }, options)) {
      if (refund.status !== "failed" && refund.status !== "canceled") refunds.push(listedRefund(refund));
    }
    return { refunds: refunds.toReversed(), nextCursor: null };
  }

  /**
   * Inside `searchConsistencyMs` of the operation's first attempt, reads the list (strongly consistent: a charge
   * is found the moment it exists); for older operations, or without `firstAttemptAt`, searches (long caught up
   * with them). A miss proves nothing until the last attempt is `searchConsistencyMs` old: a request may still
   * be on its way, or the search behind.
   */
  async findCharge(lookup: {
    idempotencyKey: string;
    metadata: ChargeMetadata;
    lastAttemptAt: Date;
    firstAttemptAt?: Date;
  }): Promise<GatewayLookup> {
    const { idempotencyKey, metadata, lastAttemptAt, firstAttemptAt } = lookup;
    const window = this.options.searchConsistencyMs;
    const young = firstAttemptAt !== undefined && Date.now() - firstAttemptAt.getTime() < window;
    const intents = young
      ? await this.listedUnder(idempotencyKey, metadata.requestId, firstAttemptAt)
      : await this.searchedUnder(idempotencyKey, metadata.requestId);
    const found = lookupOf(intents);
    if (found) return found;
    const since = Date.now() - lastAttemptAt.getTime();
    if (since < window) {
      const read = young ? "the list" : "search";
      const reason =
        `${read} found nothing ${since} ms after the last attempt; ` +
        `a request on its way (or the search) may lag up to ${window} ms`;
      return { kind: "unproven", reason };
    }
    return { kind: "not_charged", refused: null };
  }

  /**
   * The final PaymentIntents created in [since, until), oldest first, the
   * window widened to whole seconds (Stripe's `created`), never narrowed: an
   * intent near a bound may be listed by two windows. Stripe lists
   * newest first; a walk forwards pages with `ending_before` from the oldest
   * page, which the first call reaches by walking back through the window.
   */
  async listCharges({ since, until, cursor, limit = 100 }: ChargeListWindow) {
    const options = { timeout: this.lookupTimeoutMs };
    // Stripe's `created` is whole seconds: the window is widened to whole seconds, never narrowed. Flooring
    // `until` left out the charges of its last second, which a reconciliation just after them (the ledger
    // tests) always met; a charge listed from just past `until` is matched by its key like any other.
    const created = { gte: Math.floor(since.getTime() / 1000), lt: Math.ceil(until.getTime() / 1000) };
    const listed = (intents: Stripe.PaymentIntent[]) => intents.map(toListed).filter((c) => c !== undefined);
    if (cursor) {
      const page = await this.stripe.paymentIntents.list({ created, limit, ending_before: cursor }, options);
      const intents = page.data.toReversed();
      return { charges: listed(intents), nextCursor: page.has_more ? intents.at(-1)!.id : null };
    }
    let page = await this.stripe.paymentIntents.list({ created, limit }, options);
    let newerPages = false;
    while (page.has_more) {
      page = await this.stripe.paymentIntents.list({ created, limit, starting_after: page.data.at(-1)!.id }, options);
      newerPages = true;
    }
    const intents = page.data.toReversed();
    return { charges: listed(intents), nextCursor: newerPages && intents.length > 0 ? intents.at(-1)!.id : null };
  }
}
