/**
 * What a database error means, read in one place. Errors reach the app in two
 * wrappings: raw driver errors (errno, code) from the statements this folder
 * sends itself, and Prisma errors, whose MariaDB adapter keeps the server's
 * error number as `meta.driverAdapterError.cause.originalCode`.
 */
type Wrapped = {
  code?: unknown;
  errno?: unknown;
  message?: unknown;
  cause?: unknown;
  meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; kind?: unknown } } };
};

/** Each error in the chain: the error, its adapter error, its causes (a few levels deep). */
function* chain(error: unknown): Generator<Wrapped> {
  for (let e: unknown = error, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const wrapped = e as Wrapped;
    yield wrapped;
    e = wrapped.meta?.driverAdapterError ?? wrapped.cause;
  }
}

/** The MySQL/MariaDB server error number behind an error (1062, 1213, ...), however it was wrapped. */
export function driverErrorCode(error: unknown): number | undefined {
  for (const e of chain(error)) {
    if (typeof e.errno === "number" && e.errno > 0) return e.errno;
    const original = e.meta?.driverAdapterError?.cause?.originalCode;
    if (typeof original === "string" && /^\d+$/.test(original)) return Number(original);
    if (typeof original === "number") return original;
  }
  return undefined;
}

/** Prisma's own code (P2002, ...), when the error came through Prisma. */
function prismaCode(error: unknown): string | undefined {
  const code = (error as Wrapped | null)?.code;
  return typeof code === "string" && /^P\d{4}$/.test(code) ? code : undefined;
}

/**
 * True when a write failed on a UNIQUE index (error 1062).
 *
 * This is how ownership of an idempotency key is decided: insert first and let
 * the unique index pick the winner.
 */
export function isDuplicateKeyError(error: unknown): boolean {
  if (driverErrorCode(error) === 1062 || prismaCode(error) === "P2002") return true;
  return (error as Wrapped | null)?.meta?.driverAdapterError?.cause?.kind === "UniqueConstraintViolation";
}

/**
 * InnoDB picked the statement as a deadlock victim (1213) or timed it out on a
 * lock (1205); Galera reports a write set that failed certification against
 * another node's as 1213 too. None is a bug: the work may simply be run again.
 */
export function isLockConflictError(error: unknown): boolean {
  const code = driverErrorCode(error);
  return code === 1213 || code === 1205 || prismaCode(error) === "P2034";
}

/** Runs `work`, again after a short random pause when it lost a lock conflict. */
export async function retryOnLockConflict<T>(work: () => Promise<T>, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= attempts || !isLockConflictError(error)) throw error;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    }
  }
}

/** Connection-level failures, by name (driver and Node) and Prisma code: the database is down, not a bug. */
const UNAVAILABLE_CODES = new Set([
  "P1001",
  "P1002",
  "P1008",
  "P1017",
  "P2024",
  "P2028",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ER_GET_CONNECTION_TIMEOUT",
  "ER_CONNECTION_TIMEOUT",
  "ER_SOCKET_UNEXPECTED_CLOSE",
  "ER_CONNECTION_ALREADY_CLOSED",
  "ER_CLOSING_POOL",
  "ER_POOL_ALREADY_CLOSED",
  "ER_CMD_CONNECTION_CLOSED",
  "ER_SERVER_SHUTDOWN",
  "ER_CONNECTION_KILLED",
]);
/**
 * Server error numbers that mean the same: too many connections, shutdown, killed, gone away, lost, and
 * a Galera node that is not part of the primary component or not synced yet (1047 "WSREP has not yet
 * prepared node for application use").
 */
const UNAVAILABLE_ERRNOS = new Set([1040, 1047, 1053, 1927, 2002, 2003, 2006, 2013, 4031]);
const UNAVAILABLE_MESSAGE = new RegExp(
  [
    "pool timeout",
    "unable to start a transaction",
    "connection (refused|closed|lost|timeout)",
    "socket (has )?(unexpectedly )?(been )?closed",
    "server shutdown",
    "can't reach database",
    "ECONNREFUSED",
    "ECONNRESET",
    "retrieve connection from pool timeout",
  ].join("|"),
  "i",
);

/** The database is down or unreachable (answered as 503), as opposed to a bug (500). */
export function isDatabaseUnavailable(error: unknown): boolean {
  const errno = driverErrorCode(error);
  if (errno !== undefined && UNAVAILABLE_ERRNOS.has(errno)) return true;
  for (const e of chain(error)) {
    if (typeof e.code === "string" && UNAVAILABLE_CODES.has(e.code)) return true;
    if (typeof e.message === "string" && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  }
  return false;
}
