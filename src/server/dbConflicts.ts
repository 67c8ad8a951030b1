/**
 * InnoDB may pick a statement as a deadlock victim (error 1213) or time it out
 * on a lock (1205) when several writers touch the same rows. Neither is a bug:
 * the statement is rolled back and may simply be run again.
 */
export function isLockConflictError(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const e = error as { code?: unknown; errno?: unknown; meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } };
  if (e.errno === 1213 || e.errno === 1205 || e.code === "P2034") return true;
  const code = e.meta?.driverAdapterError?.cause?.originalCode;
  return code === "1213" || code === "1205";
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
