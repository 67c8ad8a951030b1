-- Staff and API-client access (issue 13): server-side sessions, several API keys
-- per client, two-factor login, an append-only audit log, login throttling.

-- AlterTable: staff can be disabled and enrol a TOTP second factor.
ALTER TABLE `staff_users`
    ADD COLUMN `disabled_at` DATETIME(6) NULL,
    ADD COLUMN `totp_secret` VARCHAR(64) NULL,
    ADD COLUMN `totp_pending_secret` VARCHAR(64) NULL,
    ADD COLUMN `totp_enabled_at` DATETIME(6) NULL,
    ADD COLUMN `totp_last_step` BIGINT NULL;

-- CreateTable
-- `id` is the sha256 of the token sealed in the cookie: a copy of this table
-- cannot be replayed as cookies.
CREATE TABLE `staff_sessions` (
    `id` CHAR(64) NOT NULL,
    `staff_user_id` INTEGER NOT NULL,
    `stage` ENUM('second_factor', 'active') NOT NULL,
    `two_factor` BOOLEAN NOT NULL DEFAULT false,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    `last_seen_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    `expires_at` DATETIME(6) NOT NULL,
    `ip_address` VARCHAR(45) NULL,
    `user_agent` VARCHAR(255) NULL,

    INDEX `staff_sessions_user_idx`(`staff_user_id`),
    INDEX `staff_sessions_expires_idx`(`expires_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- AlterTable: a client can have several keys (rotation with a grace period).
ALTER TABLE `api_clients` ADD COLUMN `contact_email` VARCHAR(255) NULL;

-- CreateTable
CREATE TABLE `api_keys` (
    `id` INTEGER NOT NULL AUTO_INCREMENT,
    `api_client_id` INTEGER NOT NULL,
    `key_hash` CHAR(64) NOT NULL,
    `key_prefix` VARCHAR(16) NOT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    `expires_at` DATETIME(6) NULL,
    `revoked_at` DATETIME(6) NULL,

    UNIQUE INDEX `api_keys_key_hash_key`(`key_hash`),
    INDEX `api_keys_client_idx`(`api_client_id`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- Every existing client keeps its key.
INSERT INTO `api_keys` (`api_client_id`, `key_hash`, `key_prefix`, `created_at`)
    SELECT `id`, `key_hash`, `key_prefix`, `created_at` FROM `api_clients`;

ALTER TABLE `api_clients` DROP INDEX `api_clients_key_hash_key`, DROP COLUMN `key_hash`, DROP COLUMN `key_prefix`;

-- CreateTable
-- Append-only: the application's database user gets SELECT and INSERT on
-- tables named audit_* and nothing else (scripts/lib/appUser.ts). No foreign
-- keys, so the record outlives the staff user it names.
CREATE TABLE `audit_events` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    `action` VARCHAR(64) NOT NULL,
    `actor_type` ENUM('staff', 'cli', 'anonymous') NOT NULL,
    `actor_staff_id` INTEGER NULL,
    `actor_label` VARCHAR(255) NULL,
    `target_type` VARCHAR(32) NULL,
    `target_id` VARCHAR(64) NULL,
    `details` TEXT NULL,
    `ip_address` VARCHAR(45) NULL,
    `user_agent` VARCHAR(255) NULL,

    INDEX `audit_events_created_idx`(`created_at`),
    INDEX `audit_events_action_idx`(`action`, `created_at`),
    INDEX `audit_events_actor_idx`(`actor_staff_id`, `created_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- The mode changes logged so far move into the audit log.
INSERT INTO `audit_events` (`created_at`, `action`, `actor_type`, `actor_staff_id`, `actor_label`, `target_type`, `target_id`, `details`)
    SELECT l.`created_at`, 'mode.changed', 'staff', l.`staff_user_id`, s.`email`, 'setting', 'idempotency_mode',
           CONCAT('{"from":"', l.`from_mode`, '","to":"', l.`to_mode`, '"}')
      FROM `rollout_audit_log` l JOIN `staff_users` s ON s.`id` = l.`staff_user_id`
     ORDER BY l.`id`;

DROP TABLE `rollout_audit_log`;

-- The mode row always exists, so switching can lock it (SELECT ... FOR UPDATE).
INSERT IGNORE INTO `settings` (`name`, `value`) VALUES ('idempotency_mode', 'optional');

-- CreateTable
-- rate-limiter-flexible's RateLimiterPrisma store: login attempts per account and per address.
CREATE TABLE `rate_limits` (
    `key` VARCHAR(255) NOT NULL,
    `points` INTEGER NOT NULL DEFAULT 0,
    `expire` DATETIME(3) NULL,

    INDEX `rate_limits_expire_idx`(`expire`),
    PRIMARY KEY (`key`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- AddForeignKey
ALTER TABLE `staff_sessions` ADD CONSTRAINT `staff_sessions_staff_user_id_fkey` FOREIGN KEY (`staff_user_id`) REFERENCES `staff_users`(`id`) ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE `api_keys` ADD CONSTRAINT `api_keys_api_client_id_fkey` FOREIGN KEY (`api_client_id`) REFERENCES `api_clients`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;
