import type * as mariadb from "mariadb";

/**
 * The Stripe-compatible mode's tables, next to the simulator's own in the same
 * gateway database. `created` is whole seconds, as Stripe's `created` field and
 * its list filters are; `seq` orders intents created in the same second.
 */
const TABLES = [
  `CREATE TABLE IF NOT EXISTS sim_payment_intents (
    id VARCHAR(40) NOT NULL PRIMARY KEY,
    idempotency_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    amount INT NOT NULL,
    currency CHAR(3) NOT NULL,
    payment_method VARCHAR(100) NOT NULL,
    status VARCHAR(32) NOT NULL,
    latest_charge VARCHAR(40) NULL,
    last_payment_error JSON NULL,
    metadata JSON NOT NULL,
    description VARCHAR(1000) NULL,
    created INT NOT NULL,
    created_at DATETIME(6) NOT NULL,
    searchable_at DATETIME(6) NOT NULL,
    seq BIGINT NOT NULL AUTO_INCREMENT,
    UNIQUE KEY sim_payment_intents_seq (seq),
    KEY sim_payment_intents_created (created, seq)
  ) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
  // One row per Idempotency-Key: in_flight while its request executes, then the
  // saved answer that every later request with the key gets back.
  `CREATE TABLE IF NOT EXISTS sim_stripe_idempotency (
    idempotency_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fingerprint CHAR(64) NOT NULL,
    state ENUM('in_flight', 'done') NOT NULL,
    status_code INT NULL,
    body MEDIUMTEXT NULL,
    request_id VARCHAR(40) NOT NULL,
    created_at DATETIME(6) NOT NULL
  ) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
];

export async function ensureStripeSchema(conn: mariadb.Connection) {
  for (const ddl of TABLES) await conn.query(ddl);
}
