-- Healing a late charge: the reconciliation refunds a gateway charge made for an operation the app had answered
-- "no charge was made", records it, and says so on the mismatch, the run and the audit log (as the system).
ALTER TABLE `ledger_mismatches` ADD COLUMN `healed_refund_id` VARCHAR(32) NULL;
ALTER TABLE `reconciliation_runs` ADD COLUMN `healed` INTEGER NOT NULL DEFAULT 0;
ALTER TABLE `audit_events` MODIFY `actor_type` ENUM('staff', 'cli', 'anonymous', 'system') NOT NULL;
