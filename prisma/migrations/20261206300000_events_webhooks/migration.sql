-- Events and webhooks (issue 41). An event is written in the transaction that makes the money change it reports
-- (a transactional outbox), together with one delivery per subscribed endpoint; the dispatcher claims due
-- deliveries with FOR UPDATE SKIP LOCKED and records every attempt.

-- CreateTable
CREATE TABLE `events` (
    `seq` BIGINT NOT NULL AUTO_INCREMENT,
    `id` VARCHAR(32) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `type` VARCHAR(64) NOT NULL,
    `data` MEDIUMTEXT NOT NULL,
    `charge_id` VARCHAR(32) NULL,
    `object_id` VARCHAR(32) NULL,
    `idempotency_key` VARBINARY(64) NULL,
    `request_id` BIGINT NULL,
    `created_at` DATETIME(3) NOT NULL,

    UNIQUE INDEX `events_id_key`(`id`),
    INDEX `events_client_seq_idx`(`api_client_id`, `seq`),
    INDEX `events_client_type_seq_idx`(`api_client_id`, `type`, `seq`),
    INDEX `events_client_created_idx`(`api_client_id`, `created_at`),
    INDEX `events_charge_idx`(`charge_id`),
    INDEX `events_request_idx`(`request_id`),
    PRIMARY KEY (`seq`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `webhook_endpoints` (
    `id` VARCHAR(32) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `url` VARCHAR(2048) NOT NULL,
    `event_types` VARCHAR(1024) NOT NULL,
    `description` VARCHAR(255) NULL,
    `secret` VARCHAR(100) NOT NULL,
    `previous_secret` VARCHAR(100) NULL,
    `previous_secret_until` DATETIME(3) NULL,
    `enabled` BOOLEAN NOT NULL DEFAULT true,
    `disabled_reason` VARCHAR(500) NULL,
    `disabled_at` DATETIME(3) NULL,
    `failing_since` DATETIME(3) NULL,
    `created_at` DATETIME(3) NOT NULL,

    INDEX `webhook_endpoints_client_idx`(`api_client_id`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `webhook_deliveries` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `event_id` VARCHAR(32) NOT NULL,
    `endpoint_id` VARCHAR(32) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `state` ENUM('pending', 'delivered', 'failed', 'cancelled') NOT NULL DEFAULT 'pending',
    `attempts` INTEGER NOT NULL DEFAULT 0,
    `next_attempt_at` DATETIME(3) NOT NULL,
    `last_status` INTEGER NULL,
    `last_error` VARCHAR(255) NULL,
    `created_at` DATETIME(3) NOT NULL,
    `delivered_at` DATETIME(3) NULL,

    UNIQUE INDEX `webhook_deliveries_event_endpoint_key`(`event_id`, `endpoint_id`),
    INDEX `webhook_deliveries_due_idx`(`state`, `next_attempt_at`),
    INDEX `webhook_deliveries_endpoint_idx`(`endpoint_id`, `created_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `webhook_attempts` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `delivery_id` BIGINT NOT NULL,
    `attempt` INTEGER NOT NULL,
    `manual` BOOLEAN NOT NULL DEFAULT false,
    `started_at` DATETIME(3) NOT NULL,
    `duration_ms` INTEGER NOT NULL,
    `status` INTEGER NULL,
    `error` VARCHAR(255) NULL,
    `response_body` VARCHAR(1024) NULL,

    INDEX `webhook_attempts_delivery_idx`(`delivery_id`, `attempt`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- Lists (GET /api/charges, GET /api/refunds): a client's rows newest first, by customer, by charge.
CREATE INDEX `charges_client_customer_created_idx` ON `charges`(`api_client_id`, `customer_id`, `created_at`);
CREATE INDEX `refunds_client_charge_created_idx` ON `refunds`(`api_client_id`, `charge_id`, `created_at`);
