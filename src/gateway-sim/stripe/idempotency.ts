/**
 * Stripe's idempotency, as documented: the first request with a key saves its
 * status and body once the endpoint starts executing (500s included); a later
 * request with the key gets them back with `Idempotent-Replayed: true`; other
 * parameters under a used key are a 400 idempotency_error; a request while the
 * first still executes is a 409 and saves nothing. A request that fails
 * validation or is rate limited saves nothing either (`release`). Keys live 24 h.
 */
import { createHash } from "node:crypto";
import type * as mariadb from "mariadb";

export type SavedAnswer = { status: number; body: string; requestId: string };
export type KeyClaim =
  | { kind: "claimed" }
  | { kind: "replay"; saved: SavedAnswer }
  | { kind: "mismatch" }
  | { kind: "in_flight" };

const KEY_LIFETIME_MS = 24 * 60 * 60_000;

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => [k, canonical(v)]),
    );
  }
  return value;
}

/** The same endpoint and the same parameters, whatever their order on the wire. */
export function fingerprint(endpoint: string, params: unknown): string {
  return createHash("sha256")
    .update(JSON.stringify([endpoint, canonical(params)]))
    .digest("hex");
}

type Row = {
  fingerprint: string;
  state: "in_flight" | "done";
  status_code: number | null;
  body: string | null;
  request_id: string;
  created_at: Date;
};

export function idempotencyStore(pool: mariadb.Pool) {
  return {
    async claim(key: string, print: string, requestId: string): Promise<KeyClaim> {
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await pool.query(
            `INSERT INTO sim_stripe_idempotency (idempotency_key, fingerprint, state, request_id, created_at)
             VALUES (?, ?, 'in_flight', ?, ?)`,
            [key, print, requestId, new Date()],
          );
          return { kind: "claimed" };
        } catch (error) {
          if ((error as { errno?: number }).errno !== 1062) throw error;
        }
        const [row] = (await pool.query("SELECT * FROM sim_stripe_idempotency WHERE idempotency_key = ?", [
          key,
        ])) as Row[];
        if (!row) continue; // released in between: try to take it again
        if (Date.now() - new Date(row.created_at).getTime() > KEY_LIFETIME_MS) {
          await pool.query("DELETE FROM sim_stripe_idempotency WHERE idempotency_key = ? AND created_at = ?", [
            key,
            row.created_at,
          ]);
          continue;
        }
        if (row.fingerprint !== print) return { kind: "mismatch" };
        if (row.state === "in_flight") return { kind: "in_flight" };
        return { kind: "replay", saved: { status: row.status_code!, body: row.body!, requestId: row.request_id } };
      }
      return { kind: "in_flight" };
    },

    async save(key: string, answer: { status: number; body: string }) {
      await pool.query(
        "UPDATE sim_stripe_idempotency SET state = 'done', status_code = ?, body = ? WHERE idempotency_key = ?",
        [answer.status, answer.body, key],
      );
    },

    async release(key: string) {
      await pool.query("DELETE FROM sim_stripe_idempotency WHERE idempotency_key = ? AND state = 'in_flight'", [key]);
    },
  };
}
