import { IDEMPOTENCY_KEY_HEADER, keyProblem, serializeKey } from "./idempotencyProtocol.js";
import {
  ChargesApiError,
  InvalidIdempotencyKeyError,
  OperationExpiredError,
  OperationMismatchError,
  type OperationDeadlineError,
} from "./errors.js";
import type { MoneyResource, OperationStore, StoredOperation } from "./operationStore.js";
import { retryAfterMs } from "./retryPolicy.js";
import { getJson, type List, type ListParams, listQuery } from "./lists.js";
import type { Exchange, Transport } from "./transport.js";
import type { ApiErrorBody, OperationResult, OperationState } from "./types.js";

/** What differs between the money operations: where they are sent, and what their answer and deadline are called. */
export type OperationSpec<Name extends string> = {
  resource: MoneyResource;
  path: string;
  /** The created object's name in a result: `result.charge`, `result.refund`. */
  name: Name;
  deadlineError: (idempotencyKey: string, attempts: number, lastProblem: string) => OperationDeadlineError;
};

/**
 * How long the server keeps a key (IDEMPOTENCY_KEY_TTL_HOURS; a final answer's Idempotency-Key-Expires says it
 * exactly), how much sooner than that the client stops trusting it (clocks differ), and the clock.
 */
export type KeyLifetime = { lifetimeMs: number; marginMs: number; now: () => number };

export type CreateOptions = {
  /** Your own UUIDv4 for the operation; by default one is made. Reuse it for every retry, never a new one. */
  idempotencyKey?: string;
  /** With a store: your durable name for the operation (see OperationStore). */
  reference?: string;
};

const errorOf = (json: unknown, status: number): ApiErrorBody =>
  (json as { error?: ApiErrorBody }).error ?? { code: "unknown", message: `HTTP ${status}` };

function checkKey(key: string): void {
  const problem = keyProblem(key);
  if (problem) throw new InvalidIdempotencyKeyError(key, problem);
}

const newIdempotencyKey = () => globalThis.crypto.randomUUID();

/**
 * One money operation of the API (`client.charges`, `client.refunds`): the same per-operation key, retries,
 * deadline, replay flag, durable store and settling for each, through the client's one Transport.
 */
export class MoneyOperations<Name extends string, Params, Created> {
  constructor(
    private readonly transport: Transport,
    private readonly store: OperationStore | undefined,
    private readonly spec: OperationSpec<Name>,
    private readonly keys: KeyLifetime,
  ) {}

  /**
   * Creates the object, retrying network errors, timeouts, 409 and 500/502/503/504 (unless replayed) with
   * the SAME key until a final answer or the deadline (then an OperationDeadlineError).
   *
   * With a store, `reference` names the operation durably: the key and body are saved before the first
   * attempt, and calling again with the same reference (after a restart too) continues that operation.
   */
  async create(
    params: Params,
    { idempotencyKey, reference }: CreateOptions = {},
  ): Promise<OperationResult<Name, Created>> {
    const body = JSON.stringify(params);
    if (idempotencyKey !== undefined) checkKey(idempotencyKey);
    if (reference === undefined) return this.send(idempotencyKey ?? newIdempotencyKey(), body);

    const operation = {
      reference,
      resource: this.spec.resource,
      idempotencyKey: idempotencyKey ?? newIdempotencyKey(),
      body,
      createdAt: new Date(this.keys.now()).toISOString(),
    };
    const stored = await this.requireStore().saveIfAbsent(operation);
    const keyDiffers = idempotencyKey !== undefined && stored.idempotencyKey !== idempotencyKey;
    if (stored.body !== body || keyDiffers || !this.owns(stored)) throw new OperationMismatchError(reference);
    return this.sendStored(stored);
  }

  /** Continues a stored operation of this kind (after a restart): its own key and body, nothing else needed. */
  async resume(reference: string): Promise<OperationResult<Name, Created>> {
    const stored = await this.requireStore().get(reference);
    if (!stored) throw new Error(`No stored operation "${reference}"`);
    if (!this.owns(stored)) throw new OperationMismatchError(reference);
    return this.sendStored(stored);
  }

  /**
   * What happened to an operation, without resending its body (GET <path>?idempotency_key=K): complete (the
   * result create would have given), in_progress (ask again later), or unknown (nothing recorded under this key
   * for you: create with the same key and body is safe).
   */
  async findByIdempotencyKey(idempotencyKey: string): Promise<OperationState<OperationResult<Name, Created>>> {
    checkKey(idempotencyKey);
    const answer = await this.transport.exchange({
      path: this.spec.path,
      // The header's form: the server parses the query as it parses the header (a bare key may not hold a comma).
      query: { idempotency_key: serializeKey(idempotencyKey) },
      init: { method: "GET" },
      inFlightIsFinal: true,
      deadlineError: (attempts, problem) => this.spec.deadlineError(idempotencyKey, attempts, problem),
    });
    const error = errorOf(answer.json, answer.status);
    if (answer.replayed) return { state: "complete", result: this.toResult(answer, idempotencyKey) };
    if (answer.status === 409 && error.code === "request_in_progress") {
      const age = (error as { age_seconds?: unknown }).age_seconds;
      return {
        state: "in_progress",
        ageSeconds: typeof age === "number" ? age : undefined,
        retryAfterMs: retryAfterMs(answer.headers.get("Retry-After")),
        idempotencyKey,
      };
    }
    if (answer.status === 404 && error.code === "not_found") {
      // Not known any more is not "never happened" when this client's own operation under the key outlived it.
      const stored = (await this.store?.list())?.find((op) => op.idempotencyKey === idempotencyKey);
      if (stored && this.expired(stored)) {
        const { reference } = stored;
        return { state: "expired", idempotencyKey, keyExpiredAt: this.keyExpiry(stored), reference };
      }
      return { state: "unknown", idempotencyKey };
    }
    throw new ChargesApiError(answer.status, error);
  }

  /**
   * Your objects, newest first (GET <path> without a key), a page at a time: `charges.list({ customer })`,
   * `refunds.list({ charge })`; the next page with `starting_after` set to the last one's id while `has_more`.
   */
  list(params: ListParams & { customer?: string; charge?: string } = {}): Promise<List<Created>> {
    return getJson(this.transport, this.spec.path, listQuery(params));
  }

  /** One of your objects by its id (GET <path>/<id>): throws a ChargesApiError (404 not_found) for anyone else's. */
  async retrieve(id: string): Promise<Created> {
    const answer = await this.transport.exchange({
      path: `${this.spec.path}/${encodeURIComponent(id)}`,
      init: { method: "GET" },
      deadlineError: (attempts, problem) =>
        new Error(`GET ${this.spec.path}/${id}: no answer after ${attempts} attempts (last: ${problem})`),
    });
    if (answer.status !== 200) throw new ChargesApiError(answer.status, errorOf(answer.json, answer.status));
    return answer.json as Created;
  }

  /**
   * When the server forgets the operation's key: its last final answer said (Idempotency-Key-Expires), else its
   * start plus the key's lifetime (the server's record, made after the start, lives at least that long).
   */
  private keyExpiry(operation: StoredOperation): Date {
    const said = operation.settled?.keyExpiresAt;
    return said ? new Date(said) : new Date(Date.parse(operation.createdAt) + this.keys.lifetimeMs);
  }

  private expired(operation: StoredOperation): boolean {
    return this.keys.now() >= this.keyExpiry(operation).getTime() - this.keys.marginMs;
  }

  /** Operations stored before refunds existed carry no resource: they are charges. */
  private owns(stored: StoredOperation): boolean {
    return (stored.resource ?? "charges") === this.spec.resource;
  }

  private requireStore(): OperationStore {
    if (!this.store) throw new TypeError("Pass a store (an OperationStore) to ChargesClient to use references");
    return this.store;
  }

  /** Sends a stored operation again, only while the server still knows its key: past it, a resend is a new one. */
  private async sendStored(operation: StoredOperation): Promise<OperationResult<Name, Created>> {
    if (this.expired(operation)) {
      const { reference, idempotencyKey, settled } = operation;
      throw new OperationExpiredError(reference, idempotencyKey, this.keyExpiry(operation), settled);
    }
    const result = await this.send(operation.idempotencyKey, operation.body);
    const settled = {
      status: result.status,
      replayed: result.replayed,
      at: new Date(this.keys.now()).toISOString(),
      ...(result.keyExpiresAt && { keyExpiresAt: result.keyExpiresAt.toISOString() }),
    };
    await this.requireStore().settle(operation.reference, settled);
    return result;
  }

  private async send(idempotencyKey: string, body: string): Promise<OperationResult<Name, Created>> {
    checkKey(idempotencyKey);
    const answer = await this.transport.exchange({
      path: this.spec.path,
      init: {
        method: "POST",
        headers: { "Content-Type": "application/json", [IDEMPOTENCY_KEY_HEADER]: serializeKey(idempotencyKey) },
        body,
      },
      deadlineError: (attempts, problem) => this.spec.deadlineError(idempotencyKey, attempts, problem),
    });
    return this.toResult(answer, idempotencyKey);
  }

  private toResult(answer: Exchange, idempotencyKey: string): OperationResult<Name, Created> {
    const { status, replayed, attempts } = answer;
    const requestId = answer.headers.get("Request-Id");
    const originalRequestId = answer.headers.get("Original-Request");
    const expires = Date.parse(answer.headers.get("Idempotency-Key-Expires") ?? "");
    const keyExpiresAt = Number.isNaN(expires) ? null : new Date(expires);
    const answered = { status, replayed, attempts, idempotencyKey, requestId, originalRequestId, keyExpiresAt };
    if (status >= 200 && status < 300) {
      const created = { [this.spec.name]: answer.json } as { [K in Name]: Created };
      return { ok: true, ...answered, ...created };
    }
    return { ok: false, ...answered, error: errorOf(answer.json, status) };
  }
}
