import { ChargeDeadlineError, RefundDeadlineError } from "./errors.js";
import { Events } from "./lists.js";
import { type CreateOptions, MoneyOperations } from "./moneyOperations.js";
import type { OperationStore, StoredOperation } from "./operationStore.js";
import { Transport } from "./transport.js";
import type {
  Charge,
  ChargeResult,
  CreateChargeParams,
  CreateRefundParams,
  OperationState,
  Refund,
  RefundResult,
} from "./types.js";

export type ChargesClientOptions = {
  baseUrl: string;
  apiKey: string;
  /** Per-attempt timeout. Default 10 s. */
  attemptTimeoutMs?: number;
  /** Give up (throw an OperationDeadlineError) after this long in total. Default 60 s. */
  deadlineMs?: number;
  /** First backoff step; doubles per attempt, with full jitter. Default 250 ms. */
  baseDelayMs?: number;
  /** Largest backoff step. Default 5 s. */
  maxDelayMs?: number;
  /**
   * Sent as `Prefer: wait=N`: a retry that finds its operation in flight lets the server wait up to N
   * seconds for the outcome instead of answering 409 at once. Kept a second below the attempt's time.
   * Default 5; 0 disables.
   */
  preferWaitSeconds?: number;
  /** Saves each operation (key and body) before its first attempt: see OperationStore. */
  store?: OperationStore;
  /**
   * How long the server keeps a key (its IDEMPOTENCY_KEY_TTL_HOURS). Default 24 h. A stored operation is never
   * sent again past it (an OperationExpiredError says what is known instead): the server would take it as new.
   * A final answer's Idempotency-Key-Expires, kept with the operation, overrides it.
   */
  keyLifetimeMs?: number;
  /** How much sooner than the key's expiry the client stops sending it, for clocks that differ. Default 60 s. */
  keyExpiryMarginMs?: number;
  /** The client's clock (ms since the epoch). Default Date.now. */
  now?: () => number;
  fetch?: typeof fetch;
};

export class ChargesClient {
  /** `charges.create(params)`: a charge, one Idempotency-Key for all its attempts. */
  readonly charges: MoneyOperations<"charge", CreateChargeParams, Charge>;
  /** `refunds.create({ charge, amount_cents, reason })`: a refund, with exactly the charges' protocol. */
  readonly refunds: MoneyOperations<"refund", CreateRefundParams, Refund>;
  /** `events.list({ type })`, `events.retrieve(id)`: what happened to your money (docs/webhooks.md). */
  readonly events: Events;
  private readonly store: OperationStore | undefined;

  constructor(options: ChargesClientOptions) {
    const transport = new Transport({
      attemptTimeoutMs: 10_000,
      deadlineMs: 60_000,
      baseDelayMs: 250,
      maxDelayMs: 5_000,
      preferWaitSeconds: 5,
      ...options,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    });
    this.store = options.store;
    const keys = {
      lifetimeMs: options.keyLifetimeMs ?? 24 * 3_600_000,
      marginMs: options.keyExpiryMarginMs ?? 60_000,
      now: options.now ?? Date.now,
    };
    this.charges = new MoneyOperations(
      transport,
      this.store,
      {
        resource: "charges",
        path: "/api/charges",
        name: "charge",
        deadlineError: (key, attempts, problem) => new ChargeDeadlineError(key, attempts, problem),
      },
      keys,
    );
    this.events = new Events(transport);
    this.refunds = new MoneyOperations(
      transport,
      this.store,
      {
        resource: "refunds",
        path: "/api/refunds",
        name: "refund",
        deadlineError: (key, attempts, problem) => new RefundDeadlineError(key, attempts, problem),
      },
      keys,
    );
  }

  /** The same as `charges.create`. */
  createCharge(params: CreateChargeParams, options: CreateOptions = {}): Promise<ChargeResult> {
    return this.charges.create(params, options);
  }

  /** The same as `charges.findByIdempotencyKey`: what happened to a charge, without resending it. */
  findByIdempotencyKey(idempotencyKey: string): Promise<OperationState<ChargeResult>> {
    return this.charges.findByIdempotencyKey(idempotencyKey);
  }

  /** Continues a stored operation, a charge or a refund (after a restart): its own key and body. */
  async resume(reference: string): Promise<ChargeResult | RefundResult> {
    const stored = await this.requireStore().get(reference);
    if (!stored) throw new Error(`No stored operation "${reference}"`);
    return stored.resource === "refunds" ? this.refunds.resume(reference) : this.charges.resume(reference);
  }

  /** The stored operations without a final answer yet: what a restarted process should resume. */
  async pendingOperations(): Promise<StoredOperation[]> {
    return (await this.requireStore().list()).filter((op) => !op.settled);
  }

  private requireStore(): OperationStore {
    if (!this.store) throw new TypeError("Pass a store (an OperationStore) to ChargesClient to use references");
    return this.store;
  }
}
