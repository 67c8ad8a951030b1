-- Closed hours are folded (src/server/rollout/foldCounts.ts): the sweeper
-- moves an hour's shard rows out of request_count_buckets, summed, into
-- request_count_hours (one row per client and hour) and request_count_days
-- (one per client and day), in one transaction. Only the fold writes these two
-- tables, so it never waits on the request path's writers in a circle. An
-- hour's total is its request_count_hours row plus its rows still in
-- request_count_buckets; a day's likewise.

-- CreateTable
CREATE TABLE `request_count_hours` (
    `bucket_start` DATETIME(0) NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `keyed` INTEGER NOT NULL DEFAULT 0,
    `keyless` INTEGER NOT NULL DEFAULT 0,
    `keyless_rejected` INTEGER NOT NULL DEFAULT 0,
    `last_keyless_at` DATETIME(6) NULL,

    INDEX `request_count_hours_client_idx`(`api_client_id`, `bucket_start`),
    PRIMARY KEY (`bucket_start`, `api_client_id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `request_count_days` (
    `day` DATE NOT NULL,
    `api_client_id` INTEGER NOT NULL,
    `keyed` INTEGER NOT NULL DEFAULT 0,
    `keyless` INTEGER NOT NULL DEFAULT 0,
    `keyless_rejected` INTEGER NOT NULL DEFAULT 0,

    INDEX `request_count_days_client_idx`(`api_client_id`, `day`),
    PRIMARY KEY (`day`, `api_client_id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- AddForeignKey
ALTER TABLE `request_count_hours` ADD CONSTRAINT `request_count_hours_api_client_id_fkey` FOREIGN KEY (`api_client_id`) REFERENCES `api_clients`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE `request_count_days` ADD CONSTRAINT `request_count_days_api_client_id_fkey` FOREIGN KEY (`api_client_id`) REFERENCES `api_clients`(`id`) ON DELETE RESTRICT ON UPDATE CASCADE;
