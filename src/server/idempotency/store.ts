import { env } from "~/env";
import { db, insertReturningId, type Statement } from "~/server/db";
import { isLockConflictError, retryOnLockConflict } from "~/server/dbConflicts";
import type { IdempotentRequest, ReapOutcome } from "~/generated/prisma/client";
import { answerHere } from "./heldClaims";
import { isDuplicateKeyError } from "./isDuplicateKeyError";

export type StoredResponse = { status: number; body: string };

export type ClaimInput = { idempotencyKey: string; route: string; apiClientId: number; requestHash: string };

export type ClaimResult =
  /** This process owns the key now and must finish (complete or release) it. */
  | { kind: "claimed"; request: IdempotentRequest }
  | { kind: "replay"; response: StoredResponse }
  | { kind: "in_progress" }
  /** Another payload, or another client's key: nothing about it is revealed. */
  | { kind: "key_reused" };

/** A claim can lose a race with a delete (prune, expiry); a few rounds settle it. */
const MAX_CLAIM_ROUNDS = 3;

/**
 * Takes ownership of (key, route) by INSERTing the record: the unique index
 * decides between concurrent requests, there is no check-then-insert. The loser
 * reads the winner's record and gets a replay, a 409 or a 422. A retry of a
 * request this very process is working on, or has just finished, is answered
 * without a round trip (see heldClaims).
 */
export async function claimIdempotencyKey(input: ClaimInput): Promise<ClaimResult> {
  const known = answerHere(input);
  if (known) return known;
  for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
    const now = new Date();
    const expiresAt = new Date(now.getTime() + env.IDEMPOTENCY_KEY_TTL_HOURS * 3_600_000);
    try {
      // One autocommitted statement: there is no moment at which the row exists
      // but this process does not know it owns it (a read-back after a bare
      // INSERT had one, and the database restart test caught it).
      const id = await insertReturningId({
        sql: `INSERT INTO idempotent_requests
                (idempotency_key, route, api_client_id, request_hash, state, locked_at, created_at, updated_at, expires_at)
              VALUES (?, ?, ?, ?, 'in_progress', ?, ?, ?, ?)`,
        values: [input.idempotencyKey, input.route, input.apiClientId, input.requestHash, now, now, now, expiresAt],
      });
      const request: IdempotentRequest = {
        id,
        ...input,
        state: "in_progress",
        lockedAt: now,
        responseStatus: null,
        responseBody: null,
        reapedAs: null,
        createdAt: now,
        updatedAt: now,
        expiresAt,
      };
      return { kind: "claimed", request };
    } catch (error) {
      if (isLockConflictError(error)) continue; // InnoDB picked this insert as a deadlock victim: try again
      if (!isDuplicateKeyError(error)) throw error;
    }

    const existing = await db.idempotentRequest.findUnique({
      where: { idempotencyKey_route: { idempotencyKey: input.idempotencyKey, route: input.route } },
    });
    if (!existing) continue; // deleted between our insert and our read: try again

    if (existing.expiresAt <= now) {
      // Past its lifetime the key names a new operation. Whoever deletes the old
      // record first wins; everyone then races on the insert again.
      await db.idempotentRequest.deleteMany({ where: { id: existing.id, expiresAt: { lte: now } } });
      continue;
    }

    if (existing.apiClientId !== input.apiClientId || existing.requestHash !== input.requestHash) {
      await recordKeyReuse(existing, input);
      return { kind: "key_reused" };
    }

    if (existing.state === "complete") {
      return { kind: "replay", response: { status: existing.responseStatus ?? 500, body: existing.responseBody ?? "" } };
    }

    if (existing.lockedAt === null) {
      // Released after an unknown gateway outcome: the first retry re-takes it and
      // calls the gateway again under the same derived key.
      const retaken = await retryOnLockConflict(() =>
        db.idempotentRequest.updateMany({
          where: { id: existing.id, state: "in_progress", lockedAt: null },
          data: { lockedAt: now, updatedAt: now },
        }),
      );
      if (retaken.count === 1) return { kind: "claimed", request: { ...existing, lockedAt: now, updatedAt: now } };
    }
    return { kind: "in_progress" };
  }
  throw new Error(`could not claim idempotency key after ${MAX_CLAIM_ROUNDS} rounds`);
}

async function recordKeyReuse(existing: IdempotentRequest, input: ClaimInput) {
  await db.keyReuseAttempt.create({
    data: {
      idempotencyKey: input.idempotencyKey,
      route: input.route,
      apiClientId: input.apiClientId,
      ownerApiClientId: existing.apiClientId,
      storedHash: existing.requestHash,
      attemptedHash: input.requestHash,
    },
  });
}

/**
 * The UPDATE that stores the outcome, for a pipelinedTransaction (with the
 * charge, when there is one). It matches only while the record is still
 * in_progress; 0 rows means someone else (the sweeper) finished it first.
 */
export function completeRequest(requestId: bigint, response: StoredResponse, reapedAs: ReapOutcome | null = null): Statement {
  return {
    sql: `UPDATE idempotent_requests
          SET state = 'complete', response_status = ?, response_body = ?, locked_at = NULL, reaped_as = ?, updated_at = ?
          WHERE id = ? AND state = 'in_progress'`,
    values: [response.status, response.body, reapedAs, new Date(), requestId],
  };
}

/** Gives the key back after an unknown outcome, so a retry can take it again. */
export async function releaseClaim(requestId: bigint): Promise<void> {
  await retryOnLockConflict(() =>
    db.idempotentRequest.updateMany({
      where: { id: requestId, state: "in_progress" },
      data: { lockedAt: null, updatedAt: new Date() },
    }),
  );
}

export async function findRequest(requestId: bigint) {
  return db.idempotentRequest.findUnique({ where: { id: requestId } });
}
