-- Staff and API access, third round (issue 43). A refund a person starts in the dashboard is first written down as
-- an intention (who, what, why, from where), under the key its operation will run with: the transaction that
-- completes that operation, whoever completes it (the request, a retry, the sweeper), writes the audit entry with
-- the outcome from this row (src/server/refunds/staffIntentions.ts). The same rows count each person's refunds
-- for the hourly and daily limits, and hold a refund above the approval threshold until a second person decides.
-- A new staff member's first password must be changed at the first sign-in.

-- AlterTable
ALTER TABLE `staff_users` ADD COLUMN `must_change_password` BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE `staff_refund_intentions` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `idempotency_key` VARBINARY(64) NOT NULL,
    `charge_id` VARCHAR(32) NOT NULL,
    `amount_cents` INTEGER NOT NULL,
    `currency` VARCHAR(3) NOT NULL,
    `reason` VARCHAR(32) NOT NULL,
    `note` VARCHAR(500) NOT NULL,
    `details` TEXT NULL,
    `requested_by_staff_id` INTEGER NOT NULL,
    `requested_by_label` VARCHAR(255) NOT NULL,
    `ip_address` VARCHAR(45) NULL,
    `user_agent` VARCHAR(255) NULL,
    `status` ENUM('submitted', 'awaiting_approval', 'approved', 'rejected') NOT NULL,
    `decided_by_staff_id` INTEGER NULL,
    `decided_by_label` VARCHAR(255) NULL,
    `decided_at` DATETIME(6) NULL,
    `decision_note` VARCHAR(500) NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    UNIQUE INDEX `staff_refund_intentions_key_key`(`idempotency_key`),
    INDEX `staff_refund_intentions_requester_idx`(`requested_by_staff_id`, `created_at`),
    INDEX `staff_refund_intentions_status_idx`(`status`, `created_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
