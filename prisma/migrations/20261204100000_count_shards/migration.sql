-- Each client's hour of request counts is spread over several rows (shard),
-- summed when read: one row per client-hour made every keyless request of a
-- client wait for the previous one's commit (src/server/rollout/counters.ts).
ALTER TABLE `request_count_buckets`
    ADD COLUMN `shard` TINYINT NOT NULL DEFAULT 0 AFTER `bucket_start`,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (`api_client_id`, `bucket_start`, `shard`);
