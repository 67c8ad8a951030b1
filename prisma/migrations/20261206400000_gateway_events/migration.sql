-- The gateway's own events (issue 41, item 6): each one received is kept by its id, so that a redelivery or a
-- replay of one already acted on is answered without acting again (src/server/gatewayEvents/receive.ts).

-- CreateTable
CREATE TABLE `gateway_events` (
    `id` VARCHAR(255) NOT NULL,
    `type` VARCHAR(64) NOT NULL,
    `idempotent_request_id` BIGINT NULL,
    `outcome` VARCHAR(32) NOT NULL,
    `received_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    INDEX `gateway_events_received_idx`(`received_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
