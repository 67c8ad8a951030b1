-- An engineer's closing of a ledger mismatch (who, when, the note) is written once: no UPDATE may change it
-- afterwards, whichever database user sends it. A run's own resolution (resolved_by NULL) may still be reopened.
CREATE TRIGGER `ledger_mismatches_closing_written_once` BEFORE UPDATE ON `ledger_mismatches` FOR EACH ROW
BEGIN
    IF OLD.`resolved_by` IS NOT NULL AND NOT (
        NEW.`resolved_by` <=> OLD.`resolved_by`
        AND NEW.`resolved_at` <=> OLD.`resolved_at`
        AND NEW.`resolution_note` <=> OLD.`resolution_note`
    ) THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'ledger_mismatches: an engineer''s closing is written once';
    END IF;
END;
