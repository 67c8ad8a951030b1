import { ChargesApiError } from "./errors.js";
import type { Transport } from "./transport.js";
import type { ApiErrorBody } from "./types.js";

/**
 * Reading lists and events (GET only: safe to retry as often as the transport does). Stripe's list parameters:
 * newest first, `limit` (1-100), `starting_after` / `ending_before` (an id of the page's last / first object),
 * `created` bounds (ISO 8601 or Unix seconds).
 */
export type ListParams = {
  limit?: number;
  starting_after?: string;
  ending_before?: string;
  created?: { gte?: string | number; gt?: string | number; lte?: string | number; lt?: string | number };
};

export type List<T> = { object: "list"; data: T[]; has_more: boolean; url: string };

/** An event: what happened to your money (docs/webhooks.md), as GET /api/events and every webhook carry it. */
export type Event = {
  id: string;
  object: "event";
  type: string;
  sequence: number;
  created_at: string;
  data: { object: Record<string, unknown> };
  request: { id: string | null; idempotency_key: string | null };
};

const errorOf = (json: unknown, status: number): ApiErrorBody =>
  (json as { error?: ApiErrorBody }).error ?? { code: "unknown", message: `HTTP ${status}` };

/** The query of a list: the parameters above and any filters (`customer`, `charge`, `type`). */
export function listQuery(params: ListParams & Record<string, unknown> = {}): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    if (name === "created" && typeof value === "object") {
      for (const [bound, at] of Object.entries(value as Record<string, unknown>))
        if (at !== undefined) query[`created[${bound}]`] = String(at);
    } else query[name] = String(value);
  }
  return query;
}

/** One GET answered 200, else a ChargesApiError. */
export async function getJson<T>(transport: Transport, path: string, query: Record<string, string> = {}): Promise<T> {
  const answer = await transport.exchange({
    path,
    query,
    init: { method: "GET" },
    deadlineError: (attempts, problem) => new Error(`GET ${path}: no answer after ${attempts} attempts (${problem})`),
  });
  if (answer.status !== 200) throw new ChargesApiError(answer.status, errorOf(answer.json, answer.status));
  return answer.json as T;
}

/** `client.events`: your events, newest first (GET /api/events), and one by id. */
export class Events {
  constructor(private readonly transport: Transport) {}

  list(params: ListParams & { type?: string } = {}): Promise<List<Event>> {
    return getJson(this.transport, "/api/events", listQuery(params));
  }

  retrieve(id: string): Promise<Event> {
    return getJson(this.transport, `/api/events/${encodeURIComponent(id)}`);
  }
}
