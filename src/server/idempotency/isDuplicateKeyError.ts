/**
 * True when a write failed on a UNIQUE index (MySQL/MariaDB error 1062).
 *
 * This is how ownership of an idempotency key is decided: insert first and let
 * the unique index pick the winner. Through Prisma's MariaDB adapter the error is
 * P2002 carrying the driver's original code; raw driver errors carry errno 1062.
 */
export function isDuplicateKeyError(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const e = error as {
    code?: unknown;
    errno?: unknown;
    meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; kind?: unknown } } };
  };
  if (e.errno === 1062) return true;
  if (e.code === "P2002") return true;
  const cause = e.meta?.driverAdapterError?.cause;
  return cause?.originalCode === "1062" || cause?.kind === "UniqueConstraintViolation";
}
