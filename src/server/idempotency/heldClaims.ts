import type { ClaimInput } from "./store";

/**
 * The claims this process holds right now, while it waits on the gateway.
 *
 * A client that timed out retries, usually into the same process, several
 * times while the gateway works; each of those would cost a failed INSERT and
 * a read just to learn "still in progress". This process already knows: it
 * owns the record, and nothing else finishes it before this process does (the
 * sweeper reaps only after REAP_AFTER_MS, which outlasts the gateway timeout).
 *
 * This never takes a key: ownership is decided only by the unique index, in
 * claimIdempotencyKey. The map only answers 409 for a key this process already
 * won, and only to the same client with the same payload; anything else (a
 * reuse, another client, another process's claim) goes to the database.
 */
const held = new Map<string, { apiClientId: number; requestHash: string }>();

const mapKey = (claim: { idempotencyKey: string; route: string }) => `${claim.route}\n${claim.idempotencyKey}`;

/** True when this process is working on exactly this request (same key, route, client and payload). */
export function isHeldHere(claim: ClaimInput): boolean {
  const holder = held.get(mapKey(claim));
  return holder !== undefined && holder.apiClientId === claim.apiClientId && holder.requestHash === claim.requestHash;
}

/** Runs `work` for a claim just won, remembering it until the work ends, however it ends. */
export async function whileHeld<T>(claim: ClaimInput, work: () => Promise<T>): Promise<T> {
  const key = mapKey(claim);
  held.set(key, { apiClientId: claim.apiClientId, requestHash: claim.requestHash });
  try {
    return await work();
  } finally {
    held.delete(key);
  }
}
