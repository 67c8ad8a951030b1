import path from "node:path";
import { root } from "./config";
import { createDatabase, ensureServer, type PrivateMariaDb } from "./mariadbServer";
import { applyMigrations } from "./migrate";

/**
 * Makes the database usable: a server (the configured one, or a private one
 * under .data/), the app's database, migrations applied.
 */
export async function prepareDatabase(
  databaseUrl: string,
  { fresh = false } = {},
): Promise<PrivateMariaDb | undefined> {
  const server = await ensureServer(databaseUrl, path.join(root, ".data/mariadb"));
  await createDatabase(databaseUrl, { dropFirst: fresh });
  const applied = await applyMigrations(databaseUrl, path.join(root, "prisma/migrations"));
  if (applied.length > 0) console.log(`applied migrations: ${applied.join(", ")}`);
  return server;
}
