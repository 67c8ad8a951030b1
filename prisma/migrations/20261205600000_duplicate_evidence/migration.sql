-- Each possible duplicate keeps what its two requests show (src/server/customers/evidence.ts): both keyless and
-- identical, under new keys and identical close together, or two purchases; and the two requests themselves, so
-- that the evidence outlives the records. Pairs found before this are classified by the sweeper's next scans.
-- A charge's or a request's page looks up its open ledger mismatches.

-- AlterTable
ALTER TABLE `possible_duplicate_charges`
    ADD COLUMN `evidence` ENUM('keyless_retry', 'new_key_retry', 'two_purchases', 'no_evidence') NULL,
    ADD COLUMN `requests` TEXT NULL;

-- CreateIndex
CREATE INDEX `possible_duplicate_charges_evidence_idx` ON `possible_duplicate_charges`(`evidence`, `charge_created_at`);

-- CreateIndex
CREATE INDEX `ledger_mismatches_charge_idx` ON `ledger_mismatches`(`charge_id`);

-- CreateIndex
CREATE INDEX `ledger_mismatches_request_idx` ON `ledger_mismatches`(`request_id`);

-- CreateIndex
CREATE INDEX `ledger_mismatches_gateway_charge_idx` ON `ledger_mismatches`(`gateway_charge_id`);
