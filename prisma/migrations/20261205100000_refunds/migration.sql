-- Refunds: the second money route. A charge keeps what was refunded and what in-flight refunds hold, so that the
-- limit "refunded + held <= charged" is decided under the charge's row lock, never by a read before a write.
ALTER TABLE `charges`
    ADD COLUMN `amount_refunded_cents` INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN `refund_held_cents` INTEGER NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE `refunds` (
    `id` VARCHAR(32) NOT NULL,
    `charge_id` VARCHAR(32) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `amount_cents` INTEGER NOT NULL,
    `currency` CHAR(3) NOT NULL,
    `reason` ENUM('duplicate', 'requested_by_customer', 'fraudulent') NULL,
    `gateway_refund_id` VARCHAR(64) NOT NULL,
    `gateway_idempotency_key` VARCHAR(80) NOT NULL,
    `idempotent_request_id` BIGINT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    UNIQUE INDEX `refunds_gateway_idempotency_key_key`(`gateway_idempotency_key`),
    UNIQUE INDEX `refunds_idempotent_request_id_key`(`idempotent_request_id`),
    INDEX `refunds_charge_idx`(`charge_id`, `created_at`),
    INDEX `refunds_client_created_idx`(`api_client_id`, `created_at`),
    INDEX `refunds_created_idx`(`created_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `refund_holds` (
    `idempotent_request_id` BIGINT NOT NULL,
    `charge_id` VARCHAR(32) NOT NULL,
    `amount_cents` INTEGER NOT NULL,
    `reason` ENUM('duplicate', 'requested_by_customer', 'fraudulent') NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    INDEX `refund_holds_charge_idx`(`charge_id`),
    PRIMARY KEY (`idempotent_request_id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- AddForeignKey
ALTER TABLE `refunds` ADD CONSTRAINT `refunds_charge_id_fkey` FOREIGN KEY (`charge_id`) REFERENCES `charges`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE `refunds` ADD CONSTRAINT `refunds_api_client_id_fkey` FOREIGN KEY (`api_client_id`) REFERENCES `api_clients`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE `refunds` ADD CONSTRAINT `refunds_idempotent_request_id_fkey` FOREIGN KEY (`idempotent_request_id`) REFERENCES `idempotent_requests`(`id`) ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE `refund_holds` ADD CONSTRAINT `refund_holds_charge_id_fkey` FOREIGN KEY (`charge_id`) REFERENCES `charges`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;
