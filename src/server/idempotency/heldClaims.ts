import { LRUCache } from "lru-cache";
import type { ClaimInput, StoredResponse } from "./store";

/**
 * What this process knows about its own claims, so that the retries a client
 * sends into the same process need no database round trip:
 *
 * - While it waits on the gateway, a claim is held here: retries get their 409
 *   at once. Nothing else finishes the record before this process does (the
 *   sweeper reaps only after REAP_AFTER_MS, which outlasts the gateway timeout).
 * - For a minute after it stored the outcome, retries get the stored response
 *   from here. A complete record never changes, and it lives for hours
 *   (IDEMPOTENCY_KEY_TTL_HOURS) past that minute.
 *
 * This never takes a key: ownership is decided only by the unique index, in
 * claimIdempotencyKey. Only the same client with the same payload is answered
 * from here; anything else (a reuse, another client, another process's claim)
 * goes to the database.
 */
type Claim = { apiClientId: number; requestHash: string };

const held = new Map<string, Claim>();
const ANSWER_TTL_MS = 60_000;
const answered = new LRUCache<string, Claim & { response: StoredResponse }>({ max: 10_000, ttl: ANSWER_TTL_MS });

const mapKey = (claim: { idempotencyKey: string; route: string }) => `${claim.route}\n${claim.idempotencyKey}`;
const sameRequest = (known: Claim | undefined, claim: ClaimInput): boolean =>
  known !== undefined && known.apiClientId === claim.apiClientId && known.requestHash === claim.requestHash;

/** This process's answer to exactly this request (same key, route, client and payload), if it has one. */
export function answerHere(claim: ClaimInput): { kind: "in_progress" } | { kind: "replay"; response: StoredResponse } | undefined {
  const key = mapKey(claim);
  if (sameRequest(held.get(key), claim)) return { kind: "in_progress" };
  const done = answered.get(key);
  if (done && sameRequest(done, claim)) return { kind: "replay", response: done.response };
  return undefined;
}

/** Runs `work` for a claim just won, holding it until the work ends, however it ends. */
export async function whileHeld<T>(claim: ClaimInput, work: () => Promise<T>): Promise<T> {
  const key = mapKey(claim);
  held.set(key, { apiClientId: claim.apiClientId, requestHash: claim.requestHash });
  try {
    return await work();
  } finally {
    held.delete(key);
  }
}

/** Remembers the response just stored for a claim, for the retries that follow (never past the record's expiry). */
export function rememberAnswer(claim: ClaimInput, response: StoredResponse, expiresAt: Date): void {
  const ttl = Math.min(ANSWER_TTL_MS, expiresAt.getTime() - Date.now());
  if (ttl > 0) answered.set(mapKey(claim), { apiClientId: claim.apiClientId, requestHash: claim.requestHash, response }, { ttl });
}
