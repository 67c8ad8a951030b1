-- The dashboard (issues 12 and 16): what each request asked, the timeline of a
-- key, per-client enforcement, rejected keyless counts, possible duplicate
-- charges, and the indexes the request log, the customer view and the charge
-- lists walk. Adding nullable columns is instant on MariaDB 10.4+ and MySQL 8;
-- the indexes are built online.

-- What was asked: the request's top-level fields as sent, without the card
-- token (JSON text), and its customer, written by the claim INSERT.
ALTER TABLE `idempotent_requests`
    ADD COLUMN `customer_id` VARCHAR(64) NULL AFTER `api_client_id`,
    ADD COLUMN `request_fields` TEXT NULL AFTER `request_hash`;

-- The request log lists newest first by (created_at, id), alone or with one
-- equality filter in front; InnoDB appends the primary key to each.
CREATE INDEX `idempotent_requests_created_idx` ON `idempotent_requests`(`created_at`);
CREATE INDEX `idempotent_requests_customer_idx` ON `idempotent_requests`(`customer_id`, `created_at`);
CREATE INDEX `idempotent_requests_status_idx` ON `idempotent_requests`(`response_status`, `created_at`);
-- Records the sweeper finished (abandoned, reconciled) listed by creation time too: the index by update time
-- served the old dashboard's list only, and a sort of 25 000 abandoned records took 3 s at 5M (bench/README.md).
DROP INDEX `idempotent_requests_finished_idx` ON `idempotent_requests`;
CREATE INDEX `idempotent_requests_finished_idx` ON `idempotent_requests`(`finished_by`, `created_at`);

-- A customer's charges newest first without a sort; it also covers the duplicate check's probe (same client,
-- amount, currency and status within a window), which then never reads the rows themselves.
CREATE INDEX `charges_customer_created_idx`
    ON `charges`(`customer_id`, `created_at`, `api_client_id`, `amount_cents`, `currency`, `status`);
DROP INDEX `charges_customer_idx` ON `charges`;

-- For a reuse from the same client only: the fields it attempted (never the
-- card token), so the dashboard can say which fields differed.
-- Cross-client attempts (another client's key) are listed apart from same-client reuses.
ALTER TABLE `idempotency_key_reuses`
    ADD COLUMN `attempted_fields` TEXT NULL AFTER `attempted_hash`,
    ADD COLUMN `cross_client` BOOLEAN NOT NULL DEFAULT false AFTER `owner_api_client_id`;
UPDATE `idempotency_key_reuses` SET `cross_client` = (`api_client_id` <> `owner_api_client_id`);
CREATE INDEX `idempotency_key_reuses_kind_idx` ON `idempotency_key_reuses`(`cross_client`, `created_at`);

-- Per-client enforcement: set, the client must send an Idempotency-Key whatever the global mode.
ALTER TABLE `api_clients` ADD COLUMN `key_required_since` DATETIME(6) NULL;

-- Keyless requests refused because the header was required (global or per client).
ALTER TABLE `request_count_buckets` ADD COLUMN `keyless_rejected` INTEGER NOT NULL DEFAULT 0 AFTER `keyless`;

-- What happened to a key: claims, 409s, replays, reuse attempts, releases,
-- take-overs, completions, each with time and instance. Buffered in memory by
-- each process and written once a second (src/server/idempotency/events.ts).
CREATE TABLE `idempotency_events` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `created_at` DATETIME(6) NOT NULL,
    `kind` ENUM('claimed', 'in_progress', 'replayed', 'key_reused', 'released', 'taken_over', 'completed') NOT NULL,
    `request_id` BIGINT NULL,
    `idempotency_key` VARBINARY(64) NULL,
    `route` VARCHAR(64) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `attempt` INTEGER NULL,
    `detail` VARCHAR(64) NULL,
    `instance` VARCHAR(100) NOT NULL,

    INDEX `idempotency_events_key_idx`(`idempotency_key`, `route`, `created_at`),
    INDEX `idempotency_events_request_idx`(`request_id`),
    INDEX `idempotency_events_created_idx`(`created_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- Succeeded charges of one client, customer, amount and currency close together
-- in time: found by the sweeper (src/server/customers/duplicates.ts), listed
-- newest first. One row per later charge, naming the nearest earlier one.
CREATE TABLE `possible_duplicate_charges` (
    `charge_id` VARCHAR(32) NOT NULL,
    `earlier_charge_id` VARCHAR(32) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `customer_id` VARCHAR(64) NOT NULL,
    `amount_cents` INTEGER NOT NULL,
    `currency` CHAR(3) NOT NULL,
    `gap_ms` INTEGER NOT NULL,
    `charge_created_at` DATETIME(6) NOT NULL,
    `found_at` DATETIME(6) NOT NULL,

    INDEX `possible_duplicate_charges_created_idx`(`charge_created_at`),
    PRIMARY KEY (`charge_id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- The rollout's series of all clients sums a month of hourly buckets (300 clients: 216 000 rows) from the index
-- alone.
DROP INDEX `request_count_buckets_bucket_idx` ON `request_count_buckets`;
CREATE INDEX `request_count_buckets_bucket_idx`
    ON `request_count_buckets`(`bucket_start`, `keyed`, `keyless`, `keyless_rejected`);
