-- A refund the gateway made after its operation was answered "no refund was made": recorded, its answer corrected,
-- and kept open for a person (the client may have refunded again).
ALTER TABLE `ledger_mismatches` MODIFY `kind` ENUM('gateway_charge_without_app_charge', 'app_charge_without_gateway_charge', 'amount_or_currency_mismatch', 'several_gateway_charges_for_one_operation', 'gateway_refund_without_app_refund', 'app_refund_without_gateway_refund', 'refund_amount_mismatch', 'several_gateway_refunds_for_one_operation', 'refunds_exceed_charge', 'refund_after_write_off') NOT NULL;
