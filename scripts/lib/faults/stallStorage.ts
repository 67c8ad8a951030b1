/**
 * The storage-stall fault: an outside transaction on the gateway simulator's database takes gap locks in the
 * primary key of the tables its money lands in, so that an INSERT whose (random) id falls in one of those gaps
 * waits, as on a stalled disk, while reads and every other insert go on. After longer than the sweeper needs to
 * write an operation off, it rolls back and the held inserts land, late: the simulator's own protocol must then
 * refuse them (Charge-Not-After, checked in the inserting transaction); through Stripe's, which has no such
 * parameter, no write-off may come before they land (the run's window covers the longest stall, as an operator's
 * must cover how long a request can be held up on its way to Stripe). Narrow on purpose: a stall of whole
 * tables held every simulator connection and its pool of 20 ran out, which failed the run for reasons that had
 * nothing to do with money.
 */
import { randomBytes } from "node:crypto";
import * as mariadb from "mariadb";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";

/**
 * Where each protocol's money lands: the table, and the prefix of the simulator's random ids in it. Charges and
 * refunds alike: through the simulator's protocol a stalled one lands after its deadline and is refused; through
 * Stripe's it lands within STRIPE_SEARCH_CONSISTENCY_MS (the run's is longer than any stall), before which
 * nothing is written off (operations/finality.ts).
 */
const MONEY_TABLES = {
  sim: [
    { table: "sim_charges", idPrefix: "gw_" },
    { table: "sim_refunds", idPrefix: "gwre_" },
  ],
  stripe: [
    { table: "sim_payment_intents", idPrefix: "pi_" },
    { table: "sim_refunds", idPrefix: "re_" },
  ],
} as const;

/** About this share of a table's new inserts waits during a stall. */
export const STALLED_SHARE = 0.08;
/** Below this many rows one gap is too large a share of the table: it is left alone. */
export const MIN_ROWS = 12;

/**
 * How many gaps to lock in a table of `rows` rows for about `share` of its inserts to fall in them. A locking
 * read of one absent (random) id locks the gap between its two neighbours; a random id lands in a gap with a
 * chance in proportion to its size, so the gap it locks holds 2 / (rows + 1) of the ids on average, twice the
 * mean gap (counted as the mean, a share of 8 % held about a fifth of a fault run's charges).
 */
export function gapsToLock(rows: number, share = STALLED_SHARE): number {
  if (rows < MIN_ROWS) return 0;
  return Math.max(1, Math.round(((rows + 1) * share) / 2));
}

/**
 * How long a stall holds: past the time a held operation needs to be written off (its gateway call times out,
 * its lease ends, it waits the reap delay, and a sweep or two comes by), and `extraMs` more.
 */
export function stallHoldMs(
  timings: { GATEWAY_TIMEOUT_MS: string; LEASE_MARGIN_MS: string; REAP_AFTER_MS: string; SWEEP_INTERVAL_MS: string },
  extraMs: number,
): number {
  const { GATEWAY_TIMEOUT_MS, LEASE_MARGIN_MS, REAP_AFTER_MS, SWEEP_INTERVAL_MS } = timings;
  return (
    Number(GATEWAY_TIMEOUT_MS) +
    Number(LEASE_MARGIN_MS) +
    Number(REAP_AFTER_MS) +
    2 * Number(SWEEP_INTERVAL_MS) +
    extraMs
  );
}

export type StallStats = {
  /** Gaps locked, over all stalls. */
  gaps: number;
  /** Simulator transactions seen waiting on a stall (each an INSERT of money held up). */
  held: number;
  /** The most waiting on one stall at once. */
  mostAtOnce: number;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Takes the locks and returns once they are held; `ending` settles when the stall has ended (rolled back).
 * The transaction's isolation is REPEATABLE READ, where a locking read of an absent id takes a gap lock.
 */
export async function stallStorage(
  stack: { gatewayDatabaseUrl: string; env: Record<string, string> },
  holdMs: number,
  stats: StallStats,
): Promise<{ ending: Promise<void> }> {
  const conn = await mariadb.createConnection(mysqlConnectionOptions(stack.gatewayDatabaseUrl));
  try {
    await conn.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    await conn.query("BEGIN");
    const tables = MONEY_TABLES[stack.env.GATEWAY === "stripe" ? "stripe" : "sim"];
    for (const { table, idPrefix } of tables) {
      const [count] = (await conn.query(`SELECT COUNT(*) AS n FROM ${table}`)) as { n: bigint }[];
      const rows = Number(count?.n ?? 0);
      // One statement per id: an IN list locks the neighbouring rows themselves too (next-key locks), which
      // would hold up refunds of those charges; an equality on one absent id locks only the gap.
      for (let i = 0; i < gapsToLock(rows); i++) {
        await conn.query(`SELECT id FROM ${table} WHERE id = ? FOR UPDATE`, [
          `${idPrefix}${randomBytes(12).toString("hex")}`,
        ]);
        stats.gaps += 1;
      }
    }
  } catch (error) {
    await conn.end().catch(() => {});
    throw error;
  }
  const ending = watch(conn, Date.now() + holdMs, stats).finally(() => conn.end().catch(() => {}));
  return { ending };
}

/** Counts the transactions waiting on this one until `until`, then lets go. */
async function watch(conn: mariadb.Connection, until: number, stats: StallStats) {
  const seen = new Set<string>();
  try {
    const [own] = (await conn.query(
      "SELECT trx_id FROM information_schema.innodb_trx WHERE trx_mysql_thread_id = CONNECTION_ID()",
    )) as { trx_id: string | bigint }[];
    while (Date.now() < until) {
      if (own) {
        const waiting = (await conn.query(
          "SELECT requesting_trx_id AS id FROM information_schema.innodb_lock_waits WHERE blocking_trx_id = ?",
          [own.trx_id],
        )) as { id: string | bigint }[];
        for (const w of waiting) seen.add(String(w.id));
        stats.mostAtOnce = Math.max(stats.mostAtOnce, waiting.length);
      }
      await sleep(Math.min(250, Math.max(0, until - Date.now())));
    }
  } finally {
    stats.held += seen.size;
    await conn.query("ROLLBACK");
  }
}
