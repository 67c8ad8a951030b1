/**
 * Requests the simulator received and refused without charging (carried out after their Charge-Not-After),
 * by key. The lookup by key reports them beside "no charge", so that an operation written off can say the
 * gateway was reached and refused it, rather than that the gateway has no trace of it.
 */
import type * as mariadb from "mariadb";

export const REFUSALS_SCHEMA = `CREATE TABLE IF NOT EXISTS sim_refusals (
  idempotency_key VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
  code VARCHAR(64) NOT NULL,
  first_at DATETIME(6) NOT NULL,
  last_at DATETIME(6) NOT NULL,
  times INT NOT NULL
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`;

export type Refusal = { code: string; first_at: Date; last_at: Date; times: number };

/** What a refused request is answered; its code is what the lookup reports. */
export const REQUEST_EXPIRED = {
  code: "request_expired",
  message: "Carried out after its Charge-Not-After time; nothing was charged",
} as const;

export async function noteRefusal(db: mariadb.Pool | mariadb.Connection, key: string, code: string): Promise<void> {
  const now = new Date();
  await db.query(
    `INSERT INTO sim_refusals (idempotency_key, code, first_at, last_at, times) VALUES (?, ?, ?, ?, 1)
     ON DUPLICATE KEY UPDATE code = VALUES(code), last_at = VALUES(last_at), times = times + 1`,
    [key, code, now, now],
  );
}

export async function refusalOf(db: mariadb.Pool | mariadb.Connection, key: string): Promise<Refusal | undefined> {
  const rows = (await db.query("SELECT code, first_at, last_at, times FROM sim_refusals WHERE idempotency_key = ?", [
    key,
  ])) as Refusal[];
  return rows[0];
}
