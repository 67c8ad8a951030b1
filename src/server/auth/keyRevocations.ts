import { randomUUID } from "node:crypto";
import type { Prisma } from "~/generated/prisma/client";
import { db } from "~/server/db";
import { log } from "~/server/observability/log";

/**
 * How a revocation (or a rotation) in one process reaches the API-key caches of
 * all the others within a second: the process that changes keys writes a new
 * value to one `settings` row in the same transaction, and every serving
 * process reads that row every 500 ms and empties its cache when it changed.
 * One indexed read per process per half second, instead of a database read per
 * request on the hot path; the database is already what every instance shares,
 * so no broker is needed.
 */
const SETTING = "api_keys_version";
export const KEY_CHANGES_POLL_MS = 500;

type Writer = Pick<Prisma.TransactionClient, "$executeRaw">;

/** Tells every instance that keys changed (call inside the change's transaction). */
export async function announceKeyChange(tx: Writer): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO settings (name, value, updated_at) VALUES (${SETTING}, ${randomUUID()}, NOW(6))
    ON DUPLICATE KEY UPDATE value = VALUES(value), updated_at = VALUES(updated_at)`;
}

const globalForWatch = globalThis as unknown as { keyChangeWatch?: { listeners: (() => void)[] } };

/** Calls `onChange` after any later announceKeyChange, in any process; starts this process's poll once. */
export function watchKeyChanges(onChange: () => void): void {
  if (globalForWatch.keyChangeWatch) {
    globalForWatch.keyChangeWatch.listeners.push(onChange);
    return;
  }
  const watch = { listeners: [onChange] };
  globalForWatch.keyChangeWatch = watch;
  let seen: string | null | undefined;
  let polling = false;
  const poll = async () => {
    if (polling) return;
    polling = true;
    try {
      const row = await db.setting.findUnique({ where: { name: SETTING } });
      const version = row?.value ?? null;
      if (seen !== undefined && version !== seen) for (const listener of watch.listeners) listener();
      seen = version;
    } catch (error) {
      log.warn({ err: error }, "could not read the API keys' version; the cache keeps its entries");
    } finally {
      polling = false;
    }
  };
  void poll();
  setInterval(poll, KEY_CHANGES_POLL_MS).unref();
}
