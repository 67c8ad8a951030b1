/**
 * The TypeScript client for the Charges API (Node 18+ and browsers; no
 * dependencies beyond fetch).
 *
 * ┌──────────────────────────────────────────────────────────────────────────┐
 * │ ONE Idempotency-Key PER LOGICAL OPERATION, REUSED ON EVERY RETRY.        │
 * │                                                                          │
 * │ A timeout does not mean the charge failed: the server (or the gateway)   │
 * │ may still be working on it. A retry with a NEW key is a new operation to │
 * │ the server, so it charges the customer again. That is exactly how the    │
 * │ double-charge incident happened. createCharge() makes the key once, up   │
 * │ front, and sends it on every attempt; pass your own key to make a retry  │
 * │ survive a restart of your process (store it with your order).            │
 * └──────────────────────────────────────────────────────────────────────────┘
 */

export type CreateChargeParams = {
  amount_cents: number;
  currency: string;
  card_token: string;
  customer_id?: string | null;
};

export type Charge = {
  id: string;
  object: "charge";
  amount_cents: number;
  currency: string;
  status: "succeeded" | "failed";
  customer_id: string | null;
  failure_code: string | null;
  gateway_charge_id: string;
  created_at: string;
};

export type ApiErrorBody = { code: string; message: string; [detail: string]: unknown };

export type ChargeResult =
  | { ok: true; status: number; charge: Charge; replayed: boolean; attempts: number; idempotencyKey: string }
  | { ok: false; status: number; error: ApiErrorBody; replayed: boolean; attempts: number; idempotencyKey: string };

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
  fetch?: typeof fetch;
};

/** The deadline passed without a final answer; retry later with the same key. */
export class ChargeDeadlineError extends Error {
  constructor(
    readonly idempotencyKey: string,
    readonly attempts: number,
    readonly lastProblem: string,
  ) {
    super(`no final answer for ${idempotencyKey} after ${attempts} attempts (last: ${lastProblem}); retry with the same key`);
    this.name = "ChargeDeadlineError";
  }
}

/** Answers that mean "not decided yet, ask again": in flight, or the service could not tell. */
const RETRYABLE_STATUSES = new Set([409, 503]);

function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ChargesClient {
  private readonly options: Required<Omit<ChargesClientOptions, "fetch">> & { fetch: typeof fetch };

  constructor(options: ChargesClientOptions) {
    this.options = {
      attemptTimeoutMs: 10_000,
      deadlineMs: 60_000,
      baseDelayMs: 250,
      maxDelayMs: 5_000,
      ...options,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    };
  }

  /**
   * Creates a charge, retrying network errors, timeouts, 409 and 503 with the
   * SAME key until a final answer (2xx or another 4xx/5xx) or the deadline.
   */
  async createCharge(params: CreateChargeParams, { idempotencyKey = newIdempotencyKey() } = {}): Promise<ChargeResult> {
    const { baseUrl, apiKey, attemptTimeoutMs, deadlineMs } = this.options;
    const deadline = Date.now() + deadlineMs;
    const body = JSON.stringify(params);
    let lastProblem = "none";

    for (let attempt = 1; ; attempt++) {
      let retryAfterMs = 0;
      try {
        const signal = AbortSignal.timeout(Math.max(1, Math.min(attemptTimeoutMs, deadline - Date.now())));
        const response = await this.options.fetch(new URL("/api/charges", baseUrl), {
          method: "POST",
          headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json", "Idempotency-Key": idempotencyKey },
          body,
          signal,
        });
        const replayed = response.headers.get("Idempotent-Replay") === "true";
        const json = parseJson(await readBody(response, signal)) as { error?: ApiErrorBody };
        if (!RETRYABLE_STATUSES.has(response.status)) {
          return response.ok
            ? { ok: true, status: response.status, charge: json as unknown as Charge, replayed, attempts: attempt, idempotencyKey }
            : { ok: false, status: response.status, error: json.error ?? { code: "unknown", message: `HTTP ${response.status}` }, replayed, attempts: attempt, idempotencyKey };
        }
        lastProblem = `${response.status} ${json.error?.code ?? ""}`.trim();
        retryAfterMs = Number(response.headers.get("Retry-After") ?? 0) * 1000 || 0;
      } catch (error) {
        // Network error or our own timeout: the charge may have happened, so the
        // only safe move is to ask again with the same key.
        lastProblem = error instanceof Error ? error.name : String(error);
      }

      const delay = Math.max(retryAfterMs, this.backoff(attempt));
      if (Date.now() + delay >= deadline) throw new ChargeDeadlineError(idempotencyKey, attempt, lastProblem);
      await sleep(delay);
    }
  }

  /** Exponential backoff with full jitter: uniform in [0, min(max, base * 2^(n-1))]. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (attempt - 1));
    return Math.random() * ceiling;
  }
}
