import { IDEMPOTENCY_KEY_HEADER, keyProblem, serializeKey } from "../server/http/idempotencyProtocol";
import { ChargeDeadlineError, ChargesApiError, InvalidIdempotencyKeyError, OperationMismatchError } from "./errors";
import type { OperationStore, StoredOperation } from "./operationStore";
import { appliedWaitSeconds, isRetryable, nextDelayMs, preferWaitSeconds, retryAfterMs } from "./retryPolicy";
import type { ApiErrorBody, Charge, ChargeResult, CreateChargeParams, OperationState } from "./types";

export type ChargesClientOptions = {
  baseUrl: string;
  apiKey: string;
  /** Per-attempt timeout. Default 10 s. */
  attemptTimeoutMs?: number;
  /** Give up (throw ChargeDeadlineError) after this long in total. Default 60 s. */
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
  fetch?: typeof fetch;
};

type Exchange = { status: number; headers: Headers; json: unknown; replayed: boolean; attempts: number };

/**
 * The body, or the abort if the attempt times out while it is read. Node's
 * fetch can leave `response.json()` pending forever when the signal fires
 * mid-body (nodejs/undici#4232); a hung read would stall the retry loop past
 * its deadline. A body cut short is a timeout: ask again with the same key.
 */
function readBody(response: Response, signal: AbortSignal): Promise<string> {
  const aborted = new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
  return Promise.race([response.text(), aborted]);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

const errorOf = (json: unknown, status: number): ApiErrorBody =>
  (json as { error?: ApiErrorBody }).error ?? { code: "unknown", message: `HTTP ${status}` };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function checkKey(key: string): void {
  const problem = keyProblem(key);
  if (problem) throw new InvalidIdempotencyKeyError(key, problem);
}

export class ChargesClient {
  private readonly options: Required<Omit<ChargesClientOptions, "fetch" | "store">> & { fetch: typeof fetch };
  private readonly store: OperationStore | undefined;

  constructor(options: ChargesClientOptions) {
    this.options = {
      attemptTimeoutMs: 10_000,
      deadlineMs: 60_000,
      baseDelayMs: 250,
      maxDelayMs: 5_000,
      preferWaitSeconds: 5,
      ...options,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    };
    this.store = options.store;
  }

  /**
   * Creates a charge, retrying network errors, timeouts, 409 and 500/502/503/504 (unless replayed) with
   * the SAME key until a final answer or the deadline.
   *
   * With a store, `reference` names the operation durably: the key and body are saved before the first
   * attempt, and calling again with the same reference (after a restart too) continues that operation.
   */
  async createCharge(
    params: CreateChargeParams,
    { idempotencyKey, reference }: { idempotencyKey?: string; reference?: string } = {},
  ): Promise<ChargeResult> {
    const body = JSON.stringify(params);
    if (idempotencyKey !== undefined) checkKey(idempotencyKey);
    if (reference === undefined) return this.send(idempotencyKey ?? newIdempotencyKey(), body);

    const store = this.requireStore();
    const operation = {
      reference,
      idempotencyKey: idempotencyKey ?? newIdempotencyKey(),
      body,
      createdAt: new Date().toISOString(),
    };
    const stored = await store.saveIfAbsent(operation);
    const keyDiffers = idempotencyKey !== undefined && stored.idempotencyKey !== idempotencyKey;
    if (stored.body !== body || keyDiffers) throw new OperationMismatchError(reference);
    return this.sendStored(stored);
  }

  /** Continues a stored operation (after a restart): its own key and body, nothing else needed. */
  async resume(reference: string): Promise<ChargeResult> {
    const stored = await this.requireStore().get(reference);
    if (!stored) throw new Error(`No stored operation "${reference}"`);
    return this.sendStored(stored);
  }

  /** The stored operations without a final answer yet: what a restarted process should resume. */
  async pendingOperations(): Promise<StoredOperation[]> {
    return (await this.requireStore().list()).filter((op) => !op.settled);
  }

  /**
   * What happened to an operation, without resending its body (GET /api/charges?idempotency_key=K):
   * complete (the result createCharge would have given), in_progress (ask again later), or unknown
   * (nothing recorded under this key for you: createCharge with the same key and body is safe).
   */
  async findByIdempotencyKey(idempotencyKey: string): Promise<OperationState> {
    checkKey(idempotencyKey);
    const url = new URL("/api/charges", this.options.baseUrl);
    // The header's form: the server parses the query as it parses the header (a bare key may not hold a comma).
    url.searchParams.set("idempotency_key", serializeKey(idempotencyKey));
    const answer = await this.exchange(idempotencyKey, url, { method: "GET" }, { inFlightIsFinal: true });
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
    if (answer.status === 404 && error.code === "not_found") return { state: "unknown", idempotencyKey };
    throw new ChargesApiError(answer.status, error);
  }

  private requireStore(): OperationStore {
    if (!this.store) throw new TypeError("Pass a store (an OperationStore) to ChargesClient to use references");
    return this.store;
  }

  private async sendStored(operation: StoredOperation): Promise<ChargeResult> {
    const result = await this.send(operation.idempotencyKey, operation.body);
    const settled = { status: result.status, replayed: result.replayed, at: new Date().toISOString() };
    await this.requireStore().settle(operation.reference, settled);
    return result;
  }

  private async send(idempotencyKey: string, body: string): Promise<ChargeResult> {
    checkKey(idempotencyKey);
    const url = new URL("/api/charges", this.options.baseUrl);
    const init = {
      method: "POST",
      headers: { "Content-Type": "application/json", [IDEMPOTENCY_KEY_HEADER]: serializeKey(idempotencyKey) },
      body,
    };
    return this.toResult(await this.exchange(idempotencyKey, url, init), idempotencyKey);
  }

  private toResult(answer: Exchange, idempotencyKey: string): ChargeResult {
    const { status, replayed, attempts } = answer;
    return answer.status >= 200 && answer.status < 300
      ? { ok: true, status, charge: answer.json as Charge, replayed, attempts, idempotencyKey }
      : { ok: false, status, error: errorOf(answer.json, status), replayed, attempts, idempotencyKey };
  }

  /** Sends until an answer that is not worth retrying arrives, or the deadline passes. */
  private async exchange(
    idempotencyKey: string,
    url: URL,
    init: Omit<RequestInit, "headers"> & { headers?: Record<string, string> },
    { inFlightIsFinal = false } = {},
  ): Promise<Exchange> {
    const { apiKey, attemptTimeoutMs, deadlineMs, baseDelayMs, maxDelayMs } = this.options;
    const deadline = Date.now() + deadlineMs;
    let lastProblem = "none";

    for (let attempt = 1; ; attempt++) {
      let wait = { retryAfterMs: 0, serverWaited: false };
      try {
        const budget = Math.max(1, Math.min(attemptTimeoutMs, deadline - Date.now()));
        const signal = AbortSignal.timeout(budget);
        const headers: Record<string, string> = { ...init.headers, Authorization: `Bearer ${apiKey}` };
        const preferWait = preferWaitSeconds(this.options.preferWaitSeconds, budget);
        if (preferWait > 0) headers.Prefer = `wait=${preferWait}`;
        const response = await this.options.fetch(url, { ...init, headers, signal });
        const replayed = response.headers.get("Idempotent-Replay") === "true";
        const json = parseJson(await readBody(response, signal));
        const code = (json as { error?: { code?: string } }).error?.code;
        const inFlight = response.status === 409 && code === "request_in_progress";
        if (!isRetryable({ status: response.status, code, replayed }) || (inFlight && inFlightIsFinal)) {
          return { status: response.status, headers: response.headers, json, replayed, attempts: attempt };
        }
        lastProblem = `${response.status} ${code ?? ""}`.trim();
        wait = {
          retryAfterMs: retryAfterMs(response.headers.get("Retry-After")),
          serverWaited: appliedWaitSeconds(response.headers.get("Preference-Applied")) !== undefined,
        };
      } catch (error) {
        // Network error or our own timeout: the charge may have happened, so the
        // only safe move is to ask again with the same key.
        lastProblem = error instanceof Error ? error.name : String(error);
      }

      const delay = nextDelayMs({ attempt, ...wait, baseMs: baseDelayMs, maxMs: maxDelayMs });
      if (Date.now() + delay >= deadline) throw new ChargeDeadlineError(idempotencyKey, attempt, lastProblem);
      await sleep(delay);
    }
  }
}

function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}
