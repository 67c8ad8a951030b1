-- The record lifecycle (src/server/idempotency/lifecycle.ts): leases with a
-- fencing token instead of a bare lock time, who finished a complete record,
-- keyless requests recorded too, keys compared byte for byte, and the ledger.
--
-- Stop every instance of the previous version before applying this: it knows
-- neither leases nor fencing tokens.

-- Keys compare byte for byte on MariaDB and MySQL 8 alike: VARBINARY has no
-- collation, so no PAD SPACE ("k" and "k " were one key under utf8mb4_bin) and
-- no case folding. NULL is a keyless request (a UNIQUE index admits many NULLs).
ALTER TABLE `idempotent_requests`
    MODIFY `idempotency_key` VARBINARY(64) NULL,
    ADD COLUMN `attempt` INTEGER NOT NULL DEFAULT 1 AFTER `state`,
    ADD COLUMN `lease_expires_at` DATETIME(6) NULL AFTER `attempt`,
    ADD COLUMN `last_attempt_at` DATETIME(6) NULL AFTER `lease_expires_at`,
    ADD COLUMN `finished_by` ENUM('request', 'reconciled', 'abandoned') NULL AFTER `response_body`;

-- A held record keeps its holder for the old reap delay (5 min); a complete one
-- was finished by its request unless the sweeper reaped it.
UPDATE `idempotent_requests`
   SET `lease_expires_at` = DATE_ADD(`locked_at`, INTERVAL 5 MINUTE)
 WHERE `state` = 'in_progress' AND `locked_at` IS NOT NULL;
UPDATE `idempotent_requests`
   SET `finished_by` = COALESCE(`reaped_as`, 'request')
 WHERE `state` = 'complete';
UPDATE `idempotent_requests` SET `last_attempt_at` = `updated_at`;
ALTER TABLE `idempotent_requests` MODIFY `last_attempt_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6);

-- Only complete records are pruned: the prune walks (state, expires_at).
DROP INDEX `idempotent_requests_prune_idx` ON `idempotent_requests`;
CREATE INDEX `idempotent_requests_prune_idx` ON `idempotent_requests`(`state`, `expires_at`);
DROP INDEX `idempotent_requests_reaped_idx` ON `idempotent_requests`;
CREATE INDEX `idempotent_requests_finished_idx` ON `idempotent_requests`(`finished_by`, `updated_at`);

ALTER TABLE `idempotent_requests`
    DROP COLUMN `locked_at`,
    DROP COLUMN `reaped_as`;

ALTER TABLE `idempotency_key_reuses` MODIFY `idempotency_key` VARBINARY(64) NOT NULL;

-- CreateTable
CREATE TABLE `reconciliation_runs` (
    `id` INTEGER NOT NULL AUTO_INCREMENT,
    `instance` VARCHAR(100) NOT NULL,
    `window_start` DATETIME(6) NOT NULL,
    `window_end` DATETIME(6) NOT NULL,
    `started_at` DATETIME(6) NOT NULL,
    `finished_at` DATETIME(6) NULL,
    `gateway_charges` INTEGER NOT NULL DEFAULT 0,
    `app_charges` INTEGER NOT NULL DEFAULT 0,
    `repaired` INTEGER NOT NULL DEFAULT 0,
    `mismatches` INTEGER NOT NULL DEFAULT 0,
    `error` TEXT NULL,

    INDEX `reconciliation_runs_started_idx`(`started_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `ledger_mismatches` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `fingerprint` VARCHAR(160) NOT NULL,
    `kind` ENUM('gateway_charge_without_app_charge', 'app_charge_without_gateway_charge', 'amount_or_currency_mismatch', 'several_gateway_charges_for_one_operation') NOT NULL,
    `gateway_charge_id` VARCHAR(64) NULL,
    `charge_id` VARCHAR(32) NULL,
    `request_id` BIGINT NULL,
    `evidence` TEXT NOT NULL,
    `first_run_id` INTEGER NOT NULL,
    `detected_at` DATETIME(6) NOT NULL,
    `last_seen_at` DATETIME(6) NOT NULL,
    `resolved_at` DATETIME(6) NULL,
    `resolved_by` INTEGER NULL,
    `resolution_note` TEXT NULL,

    UNIQUE INDEX `ledger_mismatches_fingerprint_key`(`fingerprint`),
    INDEX `ledger_mismatches_open_idx`(`resolved_at`, `detected_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- The reconciliation reads app charges by creation time, across clients.
CREATE INDEX `charges_created_idx` ON `charges`(`created_at`);
