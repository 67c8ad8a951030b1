/** Staff e-mails are stored and looked up trimmed and lower-cased: one account per address, however it is typed. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();
