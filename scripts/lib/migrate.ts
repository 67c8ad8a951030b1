import { createHash, randomUUID } from "node:crypto";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import path from "node:path";
import * as mariadb from "mariadb";
import { connectionOptions } from "./mariadbServer";

/**
 * Applies prisma/migrations the way `prisma migrate deploy` does, writing the same
 * `_prisma_migrations` rows (sha256 checksum of migration.sql, applied_steps_count),
 * so a team that can run Prisma's native engine can switch to it at any time.
 */
const BOOKKEEPING = `CREATE TABLE IF NOT EXISTS \`_prisma_migrations\` (
    \`id\`                    VARCHAR(36) PRIMARY KEY NOT NULL,
    \`checksum\`              VARCHAR(64) NOT NULL,
    \`finished_at\`           DATETIME(3),
    \`migration_name\`        VARCHAR(255) NOT NULL,
    \`logs\`                  TEXT,
    \`rolled_back_at\`        DATETIME(3),
    \`started_at\`            DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    \`applied_steps_count\`   INTEGER UNSIGNED NOT NULL DEFAULT 0
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`;

type AppliedRow = { migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null };

export async function applyMigrations(
  url: string,
  migrationsDir = path.resolve("prisma/migrations"),
): Promise<string[]> {
  const conn = await mariadb.createConnection({ ...connectionOptions(url, true), multipleStatements: true });
  const appliedNow: string[] = [];
  try {
    // Two instances starting at once must not both apply the same migration.
    await conn.query("SELECT GET_LOCK('prisma_migrate', 60)");
    await conn.query(BOOKKEEPING);
    const rows: AppliedRow[] = await conn.query(
      "SELECT migration_name, checksum, finished_at, rolled_back_at FROM _prisma_migrations",
    );
    const applied = new Map(rows.filter((r) => !r.rolled_back_at).map((r) => [r.migration_name, r]));
    const names = readdirSync(migrationsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(path.join(migrationsDir, d.name, "migration.sql")))
      .map((d) => d.name)
      .sort();

    for (const name of names) {
      const sql = readFileSync(path.join(migrationsDir, name, "migration.sql"), "utf8");
      const checksum = createHash("sha256").update(sql).digest("hex");
      const previous = applied.get(name);
      if (previous) {
        if (!previous.finished_at) {
          throw new Error(
            `Migration ${name} failed earlier; fix the database and mark it rolled back (see prisma migrate resolve).`,
          );
        }
        if (previous.checksum !== checksum)
          console.warn(`warning: migration ${name} was modified after it was applied`);
        continue;
      }
      const id = randomUUID();
      await conn.query(
        "INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, applied_steps_count) " +
          "VALUES (?, ?, ?, UTC_TIMESTAMP(3), 0)",
        [id, checksum, name],
      );
      try {
        await conn.query(sql);
      } catch (error) {
        await conn.query("UPDATE _prisma_migrations SET logs = ? WHERE id = ?", [String(error), id]);
        throw new Error(`Migration ${name} failed: ${String(error)}`);
      }
      await conn.query(
        "UPDATE _prisma_migrations SET finished_at = UTC_TIMESTAMP(3), applied_steps_count = 1 WHERE id = ?",
        [id],
      );
      appliedNow.push(name);
    }
  } finally {
    await conn.query("SELECT RELEASE_LOCK('prisma_migrate')").catch(() => {});
    await conn.end();
  }
  return appliedNow;
}
