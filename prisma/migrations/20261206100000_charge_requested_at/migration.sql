-- Evidence from when the customer paid (issue 40): every charge keeps when its operation's first request arrived
-- (its record's created_at; a keyless request is its own operation) beside when it was settled (created_at, which
-- for a charge the sweeper finished is the sweep's time). Duplicate pairs, their gaps and the incident view go by
-- arrival. Existing charges take their record's created_at, or their own where the record was pruned.

-- AlterTable
ALTER TABLE `charges` ADD COLUMN `requested_at` DATETIME(6) NULL AFTER `created_at`;

UPDATE `charges` c JOIN `idempotent_requests` r ON r.`id` = c.`idempotent_request_id`
   SET c.`requested_at` = LEAST(r.`created_at`, c.`created_at`);
UPDATE `charges` SET `requested_at` = `created_at` WHERE `requested_at` IS NULL;

ALTER TABLE `charges`
    MODIFY `requested_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    DROP INDEX `charges_customer_created_idx`,
    ADD INDEX `charges_customer_requested_idx`(`customer_id`, `requested_at`, `api_client_id`, `amount_cents`, `currency`, `status`);

-- AlterTable: pairs go by arrival. An existing pair whose charges arrived the other way round is turned round
-- (unless the other way is a pair already); its gap is measured between the arrivals.
ALTER TABLE `possible_duplicate_charges`
    MODIFY `evidence` ENUM('keyless_retry', 'new_key_retry', 'two_purchases', 'no_evidence', 'repeat_purchase') NULL,
    ADD COLUMN `requested_at` DATETIME(6) NULL AFTER `charge_created_at`;

UPDATE IGNORE `possible_duplicate_charges` p
  JOIN `charges` c ON c.`id` = p.`charge_id`
  JOIN `charges` e ON e.`id` = p.`earlier_charge_id`
   SET p.`charge_id` = e.`id`, p.`earlier_charge_id` = c.`id`, p.`charge_created_at` = e.`created_at`,
       p.`requests` = IF(p.`requests` IS NULL, NULL,
         JSON_OBJECT('later', JSON_EXTRACT(p.`requests`, '$.earlier'), 'earlier', JSON_EXTRACT(p.`requests`, '$.later')))
 WHERE e.`requested_at` > c.`requested_at`;

UPDATE `possible_duplicate_charges` p
  JOIN `charges` c ON c.`id` = p.`charge_id`
  LEFT JOIN `charges` e ON e.`id` = p.`earlier_charge_id`
   SET p.`requested_at` = c.`requested_at`,
       p.`gap_ms` = IF(e.`id` IS NULL, p.`gap_ms`,
                       ABS(TIMESTAMPDIFF(MICROSECOND, e.`requested_at`, c.`requested_at`)) DIV 1000);
UPDATE `possible_duplicate_charges` SET `requested_at` = `charge_created_at` WHERE `requested_at` IS NULL;

ALTER TABLE `possible_duplicate_charges`
    MODIFY `requested_at` DATETIME(6) NOT NULL,
    DROP INDEX `possible_duplicate_charges_created_idx`,
    DROP INDEX `possible_duplicate_charges_evidence_idx`,
    ADD INDEX `possible_duplicate_charges_requested_idx`(`requested_at`),
    ADD INDEX `possible_duplicate_charges_evidence_idx`(`evidence`, `requested_at`),
    ADD INDEX `possible_duplicate_charges_earlier_idx`(`earlier_charge_id`);
