/**
 * The simulator's refunds, shared by both of its protocols (its own, /v1/refunds, and Stripe's): one table, and
 * one transaction per refund that locks the charge, so that refunds never exceed what was charged and one
 * idempotency key never refunds twice, however many requests race.
 *
 * Test behaviours come from the charge's card, as charges' do: a charge made with `tok_refund_slow_<ms>`,
 * `tok_refund_error` or `tok_refund_then_error` (Stripe mode: `pm_sim_refund_...`) succeeds, and its refunds
 * answer late, fail refunding nothing (500), or refund and then fail (500).
 */
import { randomBytes } from "node:crypto";
import type * as mariadb from "mariadb";
import { MAX_SLOW_MS } from "./behaviour";

/** `amount` is in the charge's index so that the sum of a charge's refunds, read by every refund, reads it alone. */
export const REFUNDS_TABLE = `CREATE TABLE IF NOT EXISTS sim_refunds (
  id VARCHAR(40) NOT NULL PRIMARY KEY,
  idempotency_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  request_hash CHAR(64) NULL,
  charge_ref VARCHAR(40) NOT NULL,
  amount INT NOT NULL,
  currency CHAR(3) NOT NULL,
  metadata JSON NULL,
  created_at DATETIME(6) NOT NULL,
  seq BIGINT NOT NULL AUTO_INCREMENT,
  UNIQUE KEY sim_refunds_idempotency_key (idempotency_key),
  UNIQUE KEY sim_refunds_seq (seq),
  KEY sim_refunds_charge (charge_ref, seq, amount),
  KEY sim_refunds_created (created_at, seq)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`;

/** For gateway databases made before `amount` joined the charge's index. */
export const REFUNDS_CHARGE_INDEX_WITH_AMOUNT =
  "ALTER TABLE sim_refunds DROP KEY sim_refunds_charge, ADD KEY sim_refunds_charge (charge_ref, seq, amount)";

export type RefundRow = {
  id: string;
  idempotency_key: string | null;
  request_hash: string | null;
  charge_ref: string;
  amount: number;
  currency: string;
  metadata: string | Record<string, unknown> | null;
  created_at: Date;
  seq: number | bigint;
};

export type RefundBehaviour = { kind: "succeed"; delayMs: number } | { kind: "error" } | { kind: "refund_then_error" };

/** How a charge's refunds behave, from its card token or Stripe payment method. */
export function refundBehaviourFor(card: string): RefundBehaviour {
  const name = card.replace(/^(tok_|pm_sim_)/, "");
  const slow = /^refund_slow_(\d{1,6})$/.exec(name);
  if (slow) return { kind: "succeed", delayMs: Math.min(Number(slow[1]), MAX_SLOW_MS) };
  if (name === "refund_error") return { kind: "error" };
  if (name === "refund_then_error") return { kind: "refund_then_error" };
  return { kind: "succeed", delayMs: 0 };
}

/**
 * A charge as refunds see it; `lock` reads it FOR UPDATE inside the refund's transaction. It must send its query
 * before its first `await`: the refund pipelines the sum of the charge's refunds right behind it, and the lock has
 * to come first for the sum to count a refund that committed while this one waited.
 */
export type ChargeSource = {
  lock: (conn: mariadb.Connection, id: string) => Promise<{ amount: number; currency: string; card: string } | null>;
};

export type RefundAttempt = {
  chargeRef: string;
  /** Default: what is left. */
  amount: number | null;
  key: string | null;
  hash: string | null;
  metadata: Record<string, unknown> | null;
  /** Carried out after this time, the request refunds nothing (checked inside the transaction). */
  notAfter: Date | null;
};

export type RefundResult =
  | { kind: "refunded"; row: RefundRow; behaviour: RefundBehaviour }
  | { kind: "replay"; row: RefundRow; behaviour: RefundBehaviour }
  | { kind: "mismatch" }
  | { kind: "no_charge" }
  | { kind: "too_large"; left: number }
  | { kind: "expired" }
  | { kind: "error" };

export function refundLedger(pool: mariadb.Pool) {
  /**
   * One refund, in one transaction, in three round trips: the lock and the sum of the charge's refunds are sent
   * with BEGIN (the driver pipelines them, the server runs them in order, so a refund that committed while this
   * one waited for the lock is counted), then the INSERT, then COMMIT. The key decides by its unique index: a
   * second refund under it fails on the INSERT and replays. Only a request about to be refused first asks whether
   * its key already refunded, so that a retry of a refund that took what was left still replays.
   */
  async function refund(attempt: RefundAttempt, charges: ChargeSource): Promise<RefundResult> {
    const conn = await pool.getConnection();
    // A replay answers as the charge's refunds behave (a slow one is slow again).
    let behaviour: RefundBehaviour = { kind: "succeed", delayMs: 0 };
    try {
      const [, charge, sum] = await Promise.all([
        conn.beginTransaction(),
        charges.lock(conn, attempt.chargeRef),
        conn.query("SELECT CAST(COALESCE(SUM(amount), 0) AS INT) AS refunded FROM sim_refunds WHERE charge_ref = ?", [
          attempt.chargeRef,
        ]) as Promise<{ refunded: number }[]>,
      ]);
      if (!charge) return { kind: "no_charge" };
      behaviour = refundBehaviourFor(charge.card);
      const left = charge.amount - Number(sum[0]?.refunded ?? 0);
      const amount = attempt.amount ?? left;
      const refusal: RefundResult | null =
        attempt.notAfter && Date.now() > attempt.notAfter.getTime()
          ? { kind: "expired" }
          : behaviour.kind === "error"
            ? { kind: "error" }
            : amount <= 0 || amount > left
              ? { kind: "too_large", left }
              : null;
      if (refusal) {
        const [existing] =
          attempt.key === null
            ? []
            : ((await conn.query("SELECT * FROM sim_refunds WHERE idempotency_key = ?", [attempt.key])) as RefundRow[]);
        if (!existing) return refusal;
        return existing.request_hash === attempt.hash
          ? { kind: "replay", row: existing, behaviour }
          : { kind: "mismatch" };
      }
      const row: Omit<RefundRow, "seq"> = {
        id: `${attempt.chargeRef.startsWith("pi_") ? "re" : "gwre"}_${randomBytes(12).toString("hex")}`,
        idempotency_key: attempt.key,
        request_hash: attempt.hash,
        charge_ref: attempt.chargeRef,
        amount,
        currency: charge.currency,
        metadata: attempt.metadata,
        created_at: new Date(),
      };
      const inserted = (await conn.query(
        `INSERT INTO sim_refunds (id, idempotency_key, request_hash, charge_ref, amount, currency, metadata, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          row.id,
          row.idempotency_key,
          row.request_hash,
          row.charge_ref,
          row.amount,
          row.currency,
          row.metadata ? JSON.stringify(row.metadata) : null,
          row.created_at,
        ],
      )) as { insertId: number | bigint };
      // Checked again once the row is in, in its transaction, as a charge's is (server.ts, insertCharge): an
      // INSERT held up by a lock or a stalled disk past the deadline is rolled back and refunds nothing (the
      // check above alone let a refund land after a sweep had written its operation off).
      if (attempt.notAfter && Date.now() > attempt.notAfter.getTime()) return { kind: "expired" };
      await conn.commit();
      return { kind: "refunded", row: { ...row, seq: inserted.insertId }, behaviour };
    } catch (error) {
      // The key has refunded already (or a request racing this one with it just did): replayed.
      if ((error as { errno?: number }).errno === 1062 && attempt.key !== null) {
        await conn.rollback().catch(() => {});
        // On this request's own connection: a pool read while holding it ran the pool dry under many retries.
        const [existing] = (await conn.query("SELECT * FROM sim_refunds WHERE idempotency_key = ?", [
          attempt.key,
        ])) as RefundRow[];
        if (existing && existing.request_hash === attempt.hash) return { kind: "replay", row: existing, behaviour };
        return { kind: "mismatch" };
      }
      throw error;
    } finally {
      await conn.rollback().catch(() => {});
      conn.release();
    }
  }

  return {
    refund,
    /**
     * A locking read: a refund whose INSERT passed its deadline check but has not committed yet holds its row,
     * and this waits for it instead of answering "no refund" while it is about to land.
     */
    async byKey(key: string): Promise<RefundRow | undefined> {
      const rows = (await pool.query("SELECT * FROM sim_refunds WHERE idempotency_key = ? LOCK IN SHARE MODE", [
        key,
      ])) as RefundRow[];
      return rows[0];
    },
    async ofCharge(chargeRef: string): Promise<RefundRow[]> {
      return pool.query("SELECT * FROM sim_refunds WHERE charge_ref = ? ORDER BY seq", [chargeRef]);
    },
    /** Refunds created in [since, until) after seq `after`, oldest first, `limit` + 1 to tell if there are more. */
    async window(since: Date, until: Date, after: number, limit: number): Promise<RefundRow[]> {
      return pool.query(
        "SELECT * FROM sim_refunds WHERE created_at >= ? AND created_at < ? AND seq > ? ORDER BY seq LIMIT ?",
        [since, until, after, limit + 1],
      );
    },
  };
}

export const metadataOf = (row: RefundRow) =>
  typeof row.metadata === "string" ? (JSON.parse(row.metadata) as Record<string, unknown>) : row.metadata;
