import type { EventEmitter } from "node:events";
import * as mariadb from "mariadb";
import { isDatabaseUnavailable } from "./errors";

/**
 * The part of a pool the app uses (the statements here, Prisma's adapter).
 * A mariadb Pool is one; so is a FailoverPool.
 */
export type QueryPool = Pick<mariadb.Pool, "query" | "execute" | "getConnection" | "end"> & {
  readonly closed: boolean;
  /** A statement on a connection from getConnection failed: a FailoverPool takes its node out if it is down. */
  noteFailure?(connection: mariadb.PoolConnection, error: unknown): void;
};

/** How long a node that failed stays out of the order before it is tried again. */
const NODE_DOWN_MS = 30_000;

/**
 * One pool per node of a multi-primary cluster (the hosts of DATABASE_URL, in
 * order), used one at a time: the first node that is not down. A node is down
 * once it refused a connection or answered as unavailable (its pool reports
 * the failed connect at once, well before a request would time out); the next
 * request goes to the next node. Any node can take any write on Galera, and
 * the app's correctness never depends on which one: the unique index and the
 * fencing tokens hold cluster-wide (a conflicting write fails certification
 * with 1213, which every write path retries).
 *
 * A request already on the failed node fails (503, or a claim released), and
 * the client's retry lands on the next node. The mariadb driver's PoolCluster
 * does the same selection but hides its pools, whose use the app reports
 * (poolUsage.ts, /api/metrics), and only learns a node is down when a request
 * has waited its whole acquire timeout.
 */
type Node = { pool: mariadb.Pool; name: string; downUntil: number };

export class FailoverPool implements QueryPool {
  readonly nodes: Node[];
  private readonly nodeOf = new WeakMap<mariadb.PoolConnection, Node>();

  constructor(configs: (mariadb.PoolConfig & { host: string; port: number })[]) {
    this.nodes = configs.map((config) => {
      const node = { pool: mariadb.createPool(config), name: `${config.host}:${config.port}`, downUntil: 0 };
      // Emitted when the pool fails to open a connection (typed only in the driver's code).
      (node.pool as unknown as EventEmitter).on("error", () => this.markDown(node));
      return node;
    });
  }

  get closed(): boolean {
    return this.nodes.every((n) => n.pool.closed);
  }

  /** The nodes to try, in order: those up first, then (if all are down) the rest, soonest back first. */
  private order() {
    const now = Date.now();
    const up = this.nodes.filter((n) => n.downUntil <= now);
    const down = this.nodes.filter((n) => n.downUntil > now).sort((a, b) => a.downUntil - b.downUntil);
    return [...up, ...down];
  }

  private markDown(node: Node) {
    node.downUntil = Date.now() + NODE_DOWN_MS;
  }

  async getConnection(): Promise<mariadb.PoolConnection> {
    let lastError: unknown;
    for (const node of this.order()) {
      try {
        const connection = await node.pool.getConnection();
        node.downUntil = 0;
        this.nodeOf.set(connection, node);
        return connection;
      } catch (error) {
        if (!isDatabaseUnavailable(error)) throw error;
        this.markDown(node);
        lastError = error;
      }
    }
    throw lastError;
  }

  noteFailure(connection: mariadb.PoolConnection, error: unknown): void {
    const node = this.nodeOf.get(connection);
    if (node && isDatabaseUnavailable(error)) this.markDown(node);
  }

  /** A statement on a connection of the current node; a node that turns out down is left for the next request. */
  private async onConnection<T>(run: (connection: mariadb.PoolConnection) => Promise<T>): Promise<T> {
    const connection = await this.getConnection();
    try {
      return await run(connection);
    } catch (error) {
      this.noteFailure(connection, error);
      throw error;
    } finally {
      await connection.release().catch(() => {});
    }
  }

  query: mariadb.Pool["query"] = ((sql: string | mariadb.QueryOptions, values?: unknown) =>
    this.onConnection((c) => c.query(sql, values))) as mariadb.Pool["query"];

  execute: mariadb.Pool["execute"] = ((sql: string | mariadb.QueryOptions, values?: unknown) =>
    this.onConnection((c) => c.execute(sql, values))) as mariadb.Pool["execute"];

  async end(): Promise<void> {
    await Promise.all(this.nodes.map((n) => (n.pool.closed ? undefined : n.pool.end())));
  }
}
