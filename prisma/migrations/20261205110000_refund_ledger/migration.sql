-- The reconciliation covers refunds: their own kinds of mismatch, and the counts of each run.
ALTER TABLE `ledger_mismatches` MODIFY `kind` ENUM('gateway_charge_without_app_charge', 'app_charge_without_gateway_charge', 'amount_or_currency_mismatch', 'several_gateway_charges_for_one_operation', 'gateway_refund_without_app_refund', 'app_refund_without_gateway_refund', 'refund_amount_mismatch', 'several_gateway_refunds_for_one_operation', 'refunds_exceed_charge') NOT NULL;

ALTER TABLE `reconciliation_runs`
    ADD COLUMN `gateway_refunds` INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN `app_refunds` INTEGER NOT NULL DEFAULT 0;
