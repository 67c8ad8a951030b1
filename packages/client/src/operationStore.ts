/** The money operations of the API, named as the client's namespaces: `client.charges`, `client.refunds`. */
export type MoneyResource = "charges" | "refunds";

/**
 * A durable record of each operation, saved BEFORE its first attempt, so that a client process that
 * restarts resumes the same operation (same key, same body) instead of starting a new one, which
 * would charge again.
 *
 * The reference is the caller's own name for the operation ("charge for order 1001"); it never leaves
 * the caller. The key sent to the server is a random UUIDv4 chosen once and stored here.
 *
 * Back it with your own database in the same transaction as the order if you can: see the README
 * ("A durable key store") for a table and an implementation.
 */
export type StoredOperation = {
  reference: string;
  /** What the operation is: `client.charges` or `client.refunds`. Absent (stored before refunds): a charge. */
  resource?: MoneyResource;
  idempotencyKey: string;
  /** The exact JSON body sent on every attempt. */
  body: string;
  createdAt: string;
  /**
   * Set once a final answer arrived. `keyExpiresAt`: the answer's `Idempotency-Key-Expires`, after which the
   * server no longer knows the key (and would take it as a new operation).
   */
  settled?: { status: number; replayed: boolean; at: string; keyExpiresAt?: string };
};

export interface OperationStore {
  /**
   * Stores `operation` unless one with the same reference is stored, and returns the stored one (the first
   * writer wins, like an INSERT on a unique reference). It must be durable once the promise resolves.
   */
  saveIfAbsent(operation: StoredOperation): Promise<StoredOperation>;
  get(reference: string): Promise<StoredOperation | undefined>;
  /** Records the final answer of a stored operation. */
  settle(reference: string, settled: NonNullable<StoredOperation["settled"]>): Promise<void>;
  /** Every stored operation; the unsettled ones are what a restarted process resumes. */
  list(): Promise<StoredOperation[]>;
}

/** For tests and short-lived scripts: survives retries, not a restart. */
export class MemoryOperationStore implements OperationStore {
  private readonly operations = new Map<string, StoredOperation>();

  async saveIfAbsent(operation: StoredOperation): Promise<StoredOperation> {
    const stored = this.operations.get(operation.reference);
    if (stored) return { ...stored };
    this.operations.set(operation.reference, { ...operation });
    return { ...operation };
  }

  async get(reference: string): Promise<StoredOperation | undefined> {
    const stored = this.operations.get(reference);
    return stored && { ...stored };
  }

  async settle(reference: string, settled: NonNullable<StoredOperation["settled"]>): Promise<void> {
    const stored = this.operations.get(reference);
    if (stored) stored.settled = settled;
  }

  async list(): Promise<StoredOperation[]> {
    return [...this.operations.values()].map((op) => ({ ...op }));
  }
}
