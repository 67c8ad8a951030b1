-- Request ids: the request whose answer a record stores (a replay names it in Original-Request), and on each
-- event the request it happened in; 'answered' events say what every attempt was answered.
ALTER TABLE `idempotent_requests` ADD COLUMN `response_request_id` VARCHAR(32) NULL;

ALTER TABLE `idempotency_events`
    MODIFY `kind` ENUM('claimed', 'in_progress', 'replayed', 'key_reused', 'released', 'taken_over', 'completed', 'answered') NOT NULL,
    ADD COLUMN `api_request_id` VARCHAR(32) NULL,
    ADD COLUMN `status` SMALLINT NULL,
    ADD COLUMN `latency_ms` INTEGER NULL,
    ADD COLUMN `client_gone` BOOLEAN NULL,
    ADD INDEX `idempotency_events_api_request_idx`(`api_request_id`);
