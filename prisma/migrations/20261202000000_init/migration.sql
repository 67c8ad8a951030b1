-- CreateTable
CREATE TABLE `api_clients` (
    `id` INTEGER NOT NULL AUTO_INCREMENT,
    `name` VARCHAR(100) NOT NULL,
    `key_hash` CHAR(64) NOT NULL,
    `key_prefix` VARCHAR(16) NOT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    UNIQUE INDEX `api_clients_key_hash_key`(`key_hash`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
-- idempotency_key is compared byte for byte (utf8mb4_bin): "Key" and "key" are
-- different operations. Prisma's schema language cannot express a column
-- collation, so this is the one place it is written down.
CREATE TABLE `idempotent_requests` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `idempotency_key` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    `route` VARCHAR(64) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `request_hash` CHAR(64) NOT NULL,
    `state` ENUM('in_progress', 'complete') NOT NULL DEFAULT 'in_progress',
    `locked_at` DATETIME(6) NULL,
    `response_status` SMALLINT NULL,
    `response_body` MEDIUMTEXT NULL,
    `reaped_as` ENUM('abandoned', 'reconciled') NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    `updated_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    `expires_at` DATETIME(6) NOT NULL,

    INDEX `idempotent_requests_sweep_idx`(`state`, `updated_at`),
    INDEX `idempotent_requests_prune_idx`(`expires_at`),
    INDEX `idempotent_requests_client_created_idx`(`api_client_id`, `created_at`),
    INDEX `idempotent_requests_reaped_idx`(`reaped_as`, `updated_at`),
    UNIQUE INDEX `idempotent_requests_key_route_key`(`idempotency_key`, `route`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `charges` (
    `id` VARCHAR(32) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `customer_id` VARCHAR(64) NULL,
    `amount_cents` INTEGER NOT NULL,
    `currency` CHAR(3) NOT NULL,
    `status` ENUM('succeeded', 'failed') NOT NULL,
    `failure_code` VARCHAR(64) NULL,
    `gateway_charge_id` VARCHAR(64) NOT NULL,
    `gateway_idempotency_key` VARCHAR(80) NOT NULL,
    `idempotent_request_id` BIGINT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    UNIQUE INDEX `charges_gateway_idempotency_key_key`(`gateway_idempotency_key`),
    UNIQUE INDEX `charges_idempotent_request_id_key`(`idempotent_request_id`),
    INDEX `charges_customer_idx`(`customer_id`),
    INDEX `charges_client_created_idx`(`api_client_id`, `created_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `idempotency_key_reuses` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `idempotency_key` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    `route` VARCHAR(64) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `owner_api_client_id` INTEGER NOT NULL,
    `stored_hash` CHAR(64) NOT NULL,
    `attempted_hash` CHAR(64) NOT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    INDEX `idempotency_key_reuses_created_idx`(`created_at`),
    INDEX `idempotency_key_reuses_key_idx`(`idempotency_key`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `request_count_buckets` (
    `api_client_id` INTEGER NOT NULL,
    `bucket_start` DATETIME(0) NOT NULL,
    `keyed` INTEGER NOT NULL DEFAULT 0,
    `keyless` INTEGER NOT NULL DEFAULT 0,
    `last_keyless_at` DATETIME(6) NULL,

    INDEX `request_count_buckets_bucket_idx`(`bucket_start`),
    PRIMARY KEY (`api_client_id`, `bucket_start`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `settings` (
    `name` VARCHAR(64) NOT NULL,
    `value` VARCHAR(255) NOT NULL,
    `updated_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    PRIMARY KEY (`name`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `staff_users` (
    `id` INTEGER NOT NULL AUTO_INCREMENT,
    `email` VARCHAR(255) NOT NULL,
    `name` VARCHAR(100) NOT NULL,
    `role` ENUM('support', 'engineer') NOT NULL,
    `password_hash` VARCHAR(255) NOT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    UNIQUE INDEX `staff_users_email_key`(`email`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `rollout_audit_log` (
    `id` INTEGER NOT NULL AUTO_INCREMENT,
    `staff_user_id` INTEGER NOT NULL,
    `from_mode` VARCHAR(16) NOT NULL,
    `to_mode` VARCHAR(16) NOT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    INDEX `rollout_audit_log_created_idx`(`created_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `sweep_runs` (
    `id` INTEGER NOT NULL AUTO_INCREMENT,
    `instance` VARCHAR(100) NOT NULL,
    `started_at` DATETIME(6) NOT NULL,
    `finished_at` DATETIME(6) NULL,
    `reaped` INTEGER NOT NULL DEFAULT 0,
    `reconciled` INTEGER NOT NULL DEFAULT 0,
    `pruned` INTEGER NOT NULL DEFAULT 0,
    `error` TEXT NULL,

    INDEX `sweep_runs_started_idx`(`started_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- AddForeignKey
ALTER TABLE `idempotent_requests` ADD CONSTRAINT `idempotent_requests_api_client_id_fkey` FOREIGN KEY (`api_client_id`) REFERENCES `api_clients`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE `charges` ADD CONSTRAINT `charges_api_client_id_fkey` FOREIGN KEY (`api_client_id`) REFERENCES `api_clients`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE `charges` ADD CONSTRAINT `charges_idempotent_request_id_fkey` FOREIGN KEY (`idempotent_request_id`) REFERENCES `idempotent_requests`(`id`) ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE `request_count_buckets` ADD CONSTRAINT `request_count_buckets_api_client_id_fkey` FOREIGN KEY (`api_client_id`) REFERENCES `api_clients`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE `rollout_audit_log` ADD CONSTRAINT `rollout_audit_log_staff_user_id_fkey` FOREIGN KEY (`staff_user_id`) REFERENCES `staff_users`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;
