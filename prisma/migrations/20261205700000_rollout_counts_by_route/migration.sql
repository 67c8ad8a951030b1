-- Rollout numbers that hold after enforcing (issue 30): the counts are kept per
-- route (a second money route, POST /api/refunds, is counted apart from
-- charges), keyed requests are counted as operations (`keyed`: a new keyed
-- record) with their HTTP attempts apart (`keyed_attempts`), and `keyless` is
-- the accepted keyless requests only: refused ones are `keyless_rejected`
-- alone, and never move `last_keyless_at` (the last accepted one, which
-- "clean from" is counted from).
--
-- Existing rows: their keyless requests included the refused ones, which are
-- taken out; a row with no accepted one left forgets its last keyless time.
-- Their keyed counts were attempts: kept as attempts, and as the best known
-- number of operations. Every existing row was POST /api/charges.

-- AlterTable
ALTER TABLE `request_count_buckets`
    ADD COLUMN `route` VARCHAR(64) NOT NULL DEFAULT 'POST /api/charges' AFTER `bucket_start`,
    ADD COLUMN `keyed_attempts` INTEGER NOT NULL DEFAULT 0 AFTER `keyed`,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (`api_client_id`, `bucket_start`, `route`, `shard`),
    DROP INDEX `request_count_buckets_bucket_idx`,
    ADD INDEX `request_count_buckets_bucket_idx`(`bucket_start`, `keyed`, `keyed_attempts`, `keyless`, `keyless_rejected`);

-- AlterTable
ALTER TABLE `request_count_hours`
    ADD COLUMN `route` VARCHAR(64) NOT NULL DEFAULT 'POST /api/charges' AFTER `api_client_id`,
    ADD COLUMN `keyed_attempts` INTEGER NOT NULL DEFAULT 0 AFTER `keyed`,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (`bucket_start`, `api_client_id`, `route`);

-- AlterTable
ALTER TABLE `request_count_days`
    ADD COLUMN `route` VARCHAR(64) NOT NULL DEFAULT 'POST /api/charges' AFTER `api_client_id`,
    ADD COLUMN `keyed_attempts` INTEGER NOT NULL DEFAULT 0 AFTER `keyed`,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (`day`, `api_client_id`, `route`);

-- The counts as they now read.
UPDATE `request_count_buckets` SET `keyed_attempts` = `keyed`, `keyless` = GREATEST(`keyless` - `keyless_rejected`, 0);
UPDATE `request_count_buckets` SET `last_keyless_at` = NULL WHERE `keyless` = 0;
UPDATE `request_count_hours` SET `keyed_attempts` = `keyed`, `keyless` = GREATEST(`keyless` - `keyless_rejected`, 0);
UPDATE `request_count_hours` SET `last_keyless_at` = NULL WHERE `keyless` = 0;
UPDATE `request_count_days` SET `keyed_attempts` = `keyed`, `keyless` = GREATEST(`keyless` - `keyless_rejected`, 0);
