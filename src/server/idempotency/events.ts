/**
 * What happened to each key, for its timeline in the dashboard: claims,
 * take-overs, releases and completions (noted by records.ts when the
 * transition's statement matched), and the answers that moved nothing, 409s,
 * replays and reuse attempts (noted once per request by runIdempotent.ts).
 *
 * No request waits for this: events are held in memory and written once a
 * second in one multi-row INSERT (like the keyed counts of
 * src/server/rollout/counters.ts). A crash loses at most the last second of
 * events; the record itself still says when it was claimed and how it ended,
 * which is what the timeline falls back on. Writing the sweeper's events is
 * awaited at the end of each sweep (flushEvents), since a `--once` run exits
 * right after.
 */
import { hostname } from "node:os";
import type { IdempotencyEventKind } from "~/generated/prisma/client";
import { db, execute, type Statement } from "~/server/db";
import { currentLogContext } from "~/server/observability/context";
import { log } from "~/server/observability/log";
import { registerRetained } from "~/server/observability/retained";
import type { ClaimInput, IdempotentOutcome } from "./types";

export type EventKind = IdempotencyEventKind;

export type IdempotencyEventInput = {
  kind: EventKind;
  at?: Date;
  requestId?: bigint | null;
  idempotencyKey: string | null;
  route: string;
  apiClientId: number;
  attempt?: number | null;
  detail?: string | null;
  /** An `answered` event's answer: status, and the code in `detail`. */
  answer?: { status: number; latencyMs: number; clientGone: boolean };
};

const INSTANCE = `${hostname()}:${process.pid}`.slice(0, 100);
const FLUSH_INTERVAL_MS = 1_000;
/** Past this many unwritten events (the database refusing for a long time) the oldest are dropped. */
const MAX_PENDING = 50_000;

let pending: (IdempotencyEventInput & { at: Date; apiRequestId: string | null })[] = [];
let timer: NodeJS.Timeout | undefined;
registerRetained("key events not yet written", () => pending.length);

/** Notes an event, with the Request-Id of the request it happens in; written within a second. Never throws. */
export function noteEvent(event: IdempotencyEventInput): void {
  pending.push({ ...event, at: event.at ?? new Date(), apiRequestId: currentLogContext()?.requestId ?? null });
  if (pending.length > MAX_PENDING) pending.splice(0, pending.length - MAX_PENDING);
  timer ??= setTimeout(() => void flushEvents(), FLUSH_INTERVAL_MS).unref();
}

const ANSWER_EVENTS = { replay: "replayed", in_progress: "in_progress", key_reused: "key_reused" } as const;

/** What a request that did no work of its own was answered (409, replay, 422): one event per request. */
export function noteAnswer(claim: ClaimInput, outcome: IdempotentOutcome, waited: boolean): void {
  if (!(outcome.kind in ANSWER_EVENTS)) return;
  const kind = ANSWER_EVENTS[outcome.kind as keyof typeof ANSWER_EVENTS];
  const { idempotencyKey, route, apiClientId } = claim;
  noteEvent({ kind, idempotencyKey, route, apiClientId, detail: waited ? "after Prefer: wait" : null });
}

/**
 * What one attempt on a money route was answered, noted after its response was made: the timeline then shows
 * every attempt's status and code, how long it took, whether its client was still connected, and its Request-Id.
 */
export function noteAnswered(
  request: { idempotencyKey: string | null; route: string; apiClientId: number; recordId: bigint | null },
  answer: { status: number; code: string | null; latencyMs: number; clientGone: boolean },
): void {
  const { idempotencyKey, route, apiClientId, recordId } = request;
  // A keyless attempt's timeline is its record's: only one that got a record has one.
  if (idempotencyKey === null && recordId === null) return;
  const { status, code, latencyMs, clientGone } = answer;
  noteEvent({
    kind: "answered",
    idempotencyKey,
    route,
    apiClientId,
    requestId: recordId,
    detail: code,
    answer: { status, latencyMs: Math.round(latencyMs), clientGone },
  });
}

/** Writes the events held in memory; kept for the next round if the database refuses. */
export async function flushEvents(): Promise<void> {
  clearTimeout(timer);
  timer = undefined;
  const batch = pending;
  pending = [];
  if (batch.length === 0) return;
  try {
    await execute(insertEvents(batch));
  } catch (error) {
    log.warn({ err: error, pending: batch.length }, "idempotency events not written; retrying");
    pending = [...batch, ...pending].slice(-MAX_PENDING);
    timer ??= setTimeout(() => void flushEvents(), FLUSH_INTERVAL_MS).unref();
  }
}

/**
 * One multi-row INSERT, sent through the driver: through Prisma's raw query the same batch cost the app about
 * ten times the CPU per row (its parameter handling), two or three rows for every request on a money route.
 */
function insertEvents(batch: typeof pending): Statement {
  return {
    sql: `INSERT INTO idempotency_events
            (created_at, kind, request_id, idempotency_key, route, api_client_id, attempt, detail, instance,
             api_request_id, status, latency_ms, client_gone)
          VALUES ${batch.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
    values: batch.flatMap((e) => [
      e.at,
      e.kind,
      e.requestId ?? null,
      e.idempotencyKey === null ? null : Buffer.from(e.idempotencyKey, "latin1"),
      e.route,
      e.apiClientId,
      e.attempt ?? null,
      e.detail?.slice(0, 64) ?? null,
      INSTANCE,
      e.apiRequestId,
      e.answer?.status ?? null,
      e.answer?.latencyMs ?? null,
      e.answer?.clientGone ?? null,
    ]),
  };
}

/** Deletes events older than `cutoff` in batches (the sweeper's prune); how many. */
export async function pruneEvents(cutoff: Date, batchSize = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await db.$executeRaw`
        DELETE FROM idempotency_events WHERE created_at < ${cutoff} ORDER BY created_at LIMIT ${batchSize}`;
    total += n;
    if (n < batchSize) return total;
  }
}
