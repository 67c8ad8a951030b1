import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";

/**
 * What a log line says about the request it was written for: filled in as the
 * request is understood (its client once authenticated, its key once parsed,
 * its record once claimed) and added to every line written while it runs.
 * Identifiers only: never an API key, a card token, a body or a secret.
 */
export type LogContext = {
  /** The Request-Id this server gave the request (answered in its Request-Id header). */
  requestId?: string;
  method?: string;
  path?: string;
  apiClientId?: number;
  /** The client's Idempotency-Key; null for a keyless request. */
  idempotencyKey?: string | null;
  /** The idempotency record's id (decimal). */
  recordId?: string;
};

const storage = new AsyncLocalStorage<LogContext>();

/** A new Request-Id: `req_` and 20 hex digits, as short as Stripe's and as unlikely to repeat. */
export const newRequestId = () => `req_${randomBytes(10).toString("hex")}`;

/** Runs `work` with a context of its own (one per request). */
export function withLogContext<T>(context: LogContext, work: () => T): T {
  return storage.run({ ...context }, work);
}

/** Adds to the current request's context; outside one (the sweeper, scripts) it does nothing. */
export function addLogContext(fields: LogContext): void {
  const context = storage.getStore();
  if (context) Object.assign(context, fields);
}

export const currentLogContext = (): LogContext | undefined => storage.getStore();
