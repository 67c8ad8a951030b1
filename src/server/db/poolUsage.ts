import type * as mariadb from "mariadb";

/**
 * Pool use over the last 30 s, in 100 ms slots: the busiest moment, the
 * connections handed out and for how long in all, and the requests that had to
 * wait for one.
 */
const SLOT_MS = 100;
const HISTORY_SLOTS = 300;
export type PoolSlot = { at: number; maxActive: number; acquired: number; heldMs: number; waited: number };

/** The slots that cover [from, to): the one `from` falls in, through the last that starts before `to`. */
export function slotsBetween(slots: PoolSlot[], from: number, to = Infinity): PoolSlot[] {
  return slots.filter((s) => s.at >= Math.floor(from / SLOT_MS) * SLOT_MS && s.at < to);
}

/**
 * Connections in use and requests queued for want of one (over every node's
 * pool, for a cluster: one node is in use at a time). The gateway is slow;
 * the pool must not be what runs out, and benchmarks read this per phase
 * through /api/health (a sampled gauge would miss the bursts).
 */
export function trackPoolUsage(pools: mariadb.Pool[], limit: number) {
  const slots: PoolSlot[] = [];
  const usage = {
    active: 0,
    maxActive: 0,
    waited: 0,
    limit,
    /** Only the slots that saw any use, oldest first. */
    get recent() {
      return slots.filter((s) => s.at > Date.now() - SLOT_MS * HISTORY_SLOTS);
    },
  };
  const slot = () => {
    const at = Math.floor(Date.now() / SLOT_MS) * SLOT_MS;
    if (slots.at(-1)?.at !== at) {
      slots.push({ at, maxActive: usage.active, acquired: 0, heldMs: 0, waited: 0 });
      if (slots.length > HISTORY_SLOTS) slots.shift();
    }
    return slots.at(-1)!;
  };
  const acquiredAt = new WeakMap<mariadb.Connection, number>();
  for (const pool of pools) listen(pool);
  return usage;

  function listen(pool: mariadb.Pool) {
    pool.on("acquire", (connection) => {
      acquiredAt.set(connection, performance.now());
      usage.active += 1;
      usage.maxActive = Math.max(usage.maxActive, usage.active);
      const current = slot();
      current.maxActive = Math.max(current.maxActive, usage.active);
      current.acquired += 1;
    });
    pool.on("release", (connection) => {
      usage.active = Math.max(0, usage.active - 1);
      const since = acquiredAt.get(connection);
      if (since !== undefined) slot().heldMs += performance.now() - since;
    });
    pool.on("enqueue", () => {
      usage.waited += 1;
      slot().waited += 1;
    });
  }
}
