-- TOTP secrets are stored sealed (AES-256-GCM with TOTP_ENCRYPTION_KEY, src/server/auth/totpSecretBox.ts),
-- longer than their base32 text. Plain secrets enrolled before are sealed at their next use.
ALTER TABLE `staff_users` MODIFY `totp_secret` VARCHAR(255) NULL,
    MODIFY `totp_pending_secret` VARCHAR(255) NULL;
