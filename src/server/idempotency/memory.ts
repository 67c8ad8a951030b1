import { LRUCache } from "lru-cache";
import { registerRetained } from "~/server/observability/retained";
import type { ClaimInput, StoredResponse } from "./types";

/**
 * What this process knows about its own claims, so that the retries a client
 * sends into the same process need no database round trip:
 *
 * - While it works on a claim, the claim is held here: retries get their 409
 *   at once. Its lease in the database outlasts that work (the gateway call is
 *   bounded by the lease), so no one else can take the claim meanwhile.
 * - For a minute after it stored the outcome, or read it from the record to
 *   replay it, retries get the stored response from here. A complete record
 *   never changes, and it lives for hours (IDEMPOTENCY_KEY_TTL_HOURS) past that
 *   minute; the answer here, never past its record's expiry.
 *
 * This never takes a key: ownership is decided only by the unique index. Only
 * the same client with the same payload is answered from here; anything else
 * (a reuse, another client, another process's claim) goes to the database.
 */
type Known = { apiClientId: number; requestHash: string };

const ANSWER_TTL_MS = 60_000;
const held = new Map<string, Known & { since: Date; expiresAt: Date; done: Promise<void> }>();
const answered = new LRUCache<string, Known & { response: StoredResponse; expiresAt: Date }>({
  max: 10_000,
  ttl: ANSWER_TTL_MS,
});
registerRetained("idempotency: claims held", () => held.size);

/**
 * The cache drops a stale answer only when it is read again or when it is
 * full, so without this a process kept up to 10 000 answers (1.2 KB each,
 * about 11 MiB, a sixth of its heap) long past their minute, and its heap
 * grew until the cache was full: 17 minutes at 10 answers a second, days on a
 * quiet instance (bench/soak.ts, issue 18). Now it holds about a minute's.
 */
const PURGE_INTERVAL_MS = 10_000;
let purgeTimer: NodeJS.Timeout | undefined;
function purgeLater() {
  if (purgeTimer) return;
  purgeTimer = setTimeout(() => {
    purgeTimer = undefined;
    answered.purgeStale();
    if (answered.size > 0) purgeLater();
  }, PURGE_INTERVAL_MS).unref();
}
registerRetained("idempotency: answers remembered", () => answered.size);

const mapKey = (claim: ClaimInput) => `${claim.route}\n${claim.idempotencyKey}`;
const sameRequest = (known: Known | undefined, claim: ClaimInput): boolean =>
  known !== undefined && known.apiClientId === claim.apiClientId && known.requestHash === claim.requestHash;

export type KnownAnswer =
  | { kind: "in_progress"; since: Date; expiresAt: Date }
  | { kind: "replay"; response: StoredResponse; expiresAt: Date };

/** This process's answer to exactly this request (same key, route, client and payload), if it has one. */
export function answerHere(claim: ClaimInput): KnownAnswer | undefined {
  if (claim.idempotencyKey === null) return undefined;
  const key = mapKey(claim);
  const holding = held.get(key);
  if (holding && sameRequest(holding, claim)) {
    return { kind: "in_progress", since: holding.since, expiresAt: holding.expiresAt };
  }
  const done = answered.get(key);
  // Past its expiry the key is a new operation here at the same instant as in the database (the cache's own
  // TTL is measured on another clock, and from when the answer was remembered).
  if (done && sameRequest(done, claim) && done.expiresAt > new Date()) {
    return { kind: "replay", response: done.response, expiresAt: done.expiresAt };
  }
  return undefined;
}

/** Runs `work` for a claim just won, holding it here until the work ends, however it ends. */
export async function whileHeld<T>(
  claim: ClaimInput,
  record: { createdAt: Date; expiresAt: Date },
  work: () => Promise<T>,
): Promise<T> {
  if (claim.idempotencyKey === null) return work();
  const key = mapKey(claim);
  let finished!: () => void;
  const done = new Promise<void>((r) => (finished = r));
  const { createdAt: since, expiresAt } = record;
  held.set(key, { apiClientId: claim.apiClientId, requestHash: claim.requestHash, since, expiresAt, done });
  try {
    return await work();
  } finally {
    held.delete(key);
    finished();
  }
}

/**
 * Waits up to `ms` for this process's own work on exactly this request to end
 * (a retry asking to wait, Prefer: wait). False at once when this process does
 * not hold it: the caller then polls the record instead.
 */
export async function waitForHeldHere(claim: ClaimInput, ms: number): Promise<boolean> {
  if (claim.idempotencyKey === null) return false;
  const holding = held.get(mapKey(claim));
  if (!holding || !sameRequest(holding, claim)) return false;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([holding.done, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
  return true;
}

/** Remembers the response stored for a claim, for the retries that follow (never past the record's expiry). */
export function rememberAnswer(claim: ClaimInput, response: StoredResponse, expiresAt: Date): void {
  if (claim.idempotencyKey === null) return;
  const ttl = Math.min(ANSWER_TTL_MS, expiresAt.getTime() - Date.now());
  if (ttl <= 0) return;
  const known = { apiClientId: claim.apiClientId, requestHash: claim.requestHash, response, expiresAt };
  answered.set(mapKey(claim), known, { ttl });
  purgeLater();
}
