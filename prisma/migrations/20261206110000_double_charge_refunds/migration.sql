-- A double charge is one case with two charges (issue 40). Support's notes on dashboard refunds are kept with the
-- refund (support cannot read the audit log); the first dashboard refund of a case claims it before its operation
-- is sent, so that refunding the other half too needs the override (src/server/refunds/pairGuard.ts).

-- CreateTable
CREATE TABLE `refund_notes` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `charge_id` VARCHAR(32) NOT NULL,
    `refund_id` VARCHAR(32) NULL,
    `staff_user_id` INTEGER NULL,
    `staff_label` VARCHAR(255) NOT NULL,
    `kind` ENUM('refund', 'again', 'both_halves') NOT NULL,
    `note` VARCHAR(500) NOT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    INDEX `refund_notes_charge_idx`(`charge_id`, `created_at`),
    PRIMARY KEY (`id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;

-- CreateTable
CREATE TABLE `double_charge_claims` (
    `case_key` VARCHAR(80) NOT NULL,
    `charge_id` VARCHAR(32) NOT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),

    PRIMARY KEY (`case_key`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
