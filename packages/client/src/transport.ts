/**
 * The SDK's one retry loop, shared by every operation (charges, refunds, their lookups): it sends until an answer
 * that is not worth retrying arrives, or the deadline passes. What is worth retrying is retryPolicy's decision.
 */
import { appliedWaitSeconds, isRetryable, nextDelayMs, preferWaitSeconds, retryAfterMs } from "./retryPolicy.js";

export type TransportOptions = {
  baseUrl: string;
  apiKey: string;
  attemptTimeoutMs: number;
  deadlineMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
  preferWaitSeconds: number;
  fetch: typeof fetch;
};

export type Exchange = { status: number; headers: Headers; json: unknown; replayed: boolean; attempts: number };

export type ExchangeRequest = {
  path: string;
  query?: Record<string, string>;
  init: Omit<RequestInit, "headers"> & { headers?: Record<string, string> };
  /** A lookup reports an operation in flight instead of waiting it out. */
  inFlightIsFinal?: boolean;
  /** The error thrown when the deadline passes: it names the operation and how to settle it. */
  deadlineError: (attempts: number, lastProblem: string) => Error;
};

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

export class Transport {
  constructor(private readonly options: TransportOptions) {}

  /** Sends until an answer that is not worth retrying arrives, or the deadline passes. */
  async exchange({
    path,
    query = {},
    init,
    inFlightIsFinal = false,
    deadlineError,
  }: ExchangeRequest): Promise<Exchange> {
    const { apiKey, attemptTimeoutMs, deadlineMs, baseDelayMs, maxDelayMs } = this.options;
    const url = new URL(path, this.options.baseUrl);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
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
        const { code, retryable } = (json as { error?: { code?: string; retryable?: unknown } }).error ?? {};
        const inFlight = response.status === 409 && code === "request_in_progress";
        if (!isRetryable({ status: response.status, code, replayed, retryable }) || (inFlight && inFlightIsFinal)) {
          return { status: response.status, headers: response.headers, json, replayed, attempts: attempt };
        }
        lastProblem = `${response.status} ${code ?? ""}`.trim();
        wait = {
          retryAfterMs: retryAfterMs(response.headers.get("Retry-After")),
          serverWaited: appliedWaitSeconds(response.headers.get("Preference-Applied")) !== undefined,
        };
      } catch (error) {
        // Network error or our own timeout: the operation may have happened, so the
        // only safe move is to ask again with the same key.
        lastProblem = error instanceof Error ? error.name : String(error);
      }

      const delay = nextDelayMs({ attempt, ...wait, baseMs: baseDelayMs, maxMs: maxDelayMs });
      if (Date.now() + delay >= deadline) throw deadlineError(attempt, lastProblem);
      await sleep(delay);
    }
  }
}
