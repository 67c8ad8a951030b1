/**
 * What the app needs from a payment provider. The simulated gateway
 * (src/gateway-sim) speaks this over HTTP; a real provider gets an adapter
 * implementing the same interface. Nothing in the charge path knows which
 * provider it talks to.
 */

/**
 * Sent with every charge and stored by the provider next to it, so that the
 * ledger reconciliation can name the operation behind any charge the provider
 * lists, even one the app has no row for.
 */
export type ChargeMetadata = {
  /** The idempotency record that owns the charge (decimal id). */
  requestId: string;
  apiClientId: string;
  /** The client's Idempotency-Key; null for a keyless request. */
  idempotencyKey: string | null;
};

export type GatewayChargeRequest = {
  amountCents: number;
  currency: string;
  cardToken: string;
  customerId: string | null;
  metadata: ChargeMetadata;
};

export type GatewayCharge = {
  id: string;
  status: "succeeded" | "declined";
  amountCents: number;
  currency: string;
  customerId: string | null;
  declineCode: string | null;
  message: string | null;
};

/** A charge as the provider's charge list shows it. */
export type ListedGatewayCharge = GatewayCharge & {
  /** The key the app sent with the charge (the derived gateway key). */
  idempotencyKey: string;
  createdAt: Date;
  metadata: ChargeMetadata | null;
};

/**
 * "Did money move under this key?", asked without creating anything.
 * `unproven` is for providers whose lookup is eventually consistent: the charge
 * may exist and not be visible yet, so the caller must ask again later rather
 * than write the operation off.
 */
export type GatewayLookup =
  | { kind: "charged"; charge: GatewayCharge }
  /**
   * No money moved under the key. `refused`: the gateway received a request under it and refused it without
   * charging (the gateway's code for why); null: the gateway has no trace of any request under it.
   */
  | { kind: "not_charged"; refused: string | null }
  | { kind: "unproven"; reason: string };

export type ChargeOptions = {
  idempotencyKey: string;
  timeoutMs: number;
  /**
   * The request must not be carried out after this time. The sweeper decides
   * "never charged" from one lookup at one moment, after every attempt's
   * not-after time has passed; a request still travelling then (a slow network,
   * a proxy holding it) would charge behind its back. A gateway that can
   * enforce this refuses such a request without charging. The simulator does;
   * Stripe has no such parameter (see docs/stripe.md).
   */
  notAfter?: Date;
  /**
   * When the operation first reached for the gateway (its record's creation). A provider that forgets
   * idempotency keys after a while (Stripe: 24 hours) would take a retry after that as a new charge; the
   * adapter looks the charge up first instead.
   */
  firstAttemptAt?: Date;
};

export interface PaymentGateway {
  /**
   * How long after an attempt's deadline (`notAfter`) a request sent in it may still be carried out, or found
   * missing by a lookup that lags: 0 for a provider that refuses a request carried out after its deadline and
   * answers lookups consistently (the simulator); for one that cannot be told a deadline (Stripe), the time within
   * which any request sent has landed. "Nothing was made" waits it out (operations/finality.ts).
   */
  readonly lateLandingMs: number;
  /**
   * Which account of the provider this is (Stripe's account id): what the reconciliation checks it is comparing
   * this database with its own gateway (ledger/gatewayIdentity.ts).
   */
  identity(): Promise<string>;
  /**
   * Charges once per idempotency key: calling again with the same key returns
   * the same charge and never moves money twice.
   * @throws GatewayOutcomeUnknownError when it cannot tell whether money moved.
   */
  charge(request: GatewayChargeRequest, options: ChargeOptions): Promise<GatewayCharge>;
  /**
   * The charge made under this key, if any. `lastAttemptAt` is when the app last
   * called `charge` with it (a provider with an eventually consistent lookup
   * answers `unproven` until that is long enough ago); `firstAttemptAt`, when the
   * operation first reached for the gateway, bounds a provider's strongly
   * consistent read of the charges made since (Stripe's list).
   */
  findCharge(lookup: {
    idempotencyKey: string;
    metadata: ChargeMetadata;
    lastAttemptAt: Date;
    firstAttemptAt?: Date;
  }): Promise<GatewayLookup>;
  /**
   * Refunds once per idempotency key, as `charge` charges.
   * @throws GatewayOutcomeUnknownError when it cannot tell whether money moved; GatewayRefusedError for a no.
   */
  refund(request: GatewayRefundRequest, options: ChargeOptions): Promise<GatewayRefund>;
  /** The refund made under this key for this charge, if any (a strongly consistent read: a miss is a proof). */
  findRefund(lookup: { idempotencyKey: string; chargeId: string }): Promise<RefundLookup>;
  /** The provider's refunds created in [since, until), oldest first, a page at a time. */
  listRefunds(window: ChargeListWindow): Promise<{ refunds: ListedGatewayRefund[]; nextCursor: string | null }>;
  /** The provider's charges created in [since, until), oldest first, a page at a time. */
  listCharges(window: ChargeListWindow): Promise<{
    charges: ListedGatewayCharge[];
    nextCursor: string | null;
  }>;
}

/** A page of listCharges: charges created in [since, until), after `cursor`, at most `limit`. */
export type ChargeListWindow = { since: Date; until: Date; cursor?: string; limit?: number };

/** A refund of a gateway charge (`chargeId`: the gateway's id of the charge). */
export type GatewayRefundRequest = {
  chargeId: string;
  amountCents: number;
  /** The refund operation's own record, so that the ledger can name the operation behind any refund. */
  metadata: ChargeMetadata;
};

export type GatewayRefund = { id: string; chargeId: string; amountCents: number; currency: string };

/** A refund as the provider's refund list shows it. */
export type ListedGatewayRefund = GatewayRefund & {
  idempotencyKey: string;
  createdAt: Date;
  metadata: ChargeMetadata | null;
};

/** "Did this refund operation move money?", asked without creating anything (see GatewayLookup). */
export type RefundLookup =
  | { kind: "refunded"; refund: GatewayRefund }
  | { kind: "not_refunded" }
  | { kind: "unproven"; reason: string };

/** The gateway said no for good (nothing left to refund, the charge unknown to it): no money moved. */
export class GatewayRefusedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "GatewayRefusedError";
  }
}

/** Timeout, network error or 5xx: the charge may or may not have happened. */
export class GatewayOutcomeUnknownError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GatewayOutcomeUnknownError";
  }
}
