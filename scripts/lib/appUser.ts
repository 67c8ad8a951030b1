/**
 * The application's own database user, with only what the app needs: SELECT,
 * INSERT, UPDATE and DELETE on each of its tables, but SELECT and INSERT alone
 * on the append-only ones (audit_*), and nothing on the migrations' bookkeeping.
 * Migrations run as the admin user. The grants are computed from
 * information_schema after the migrations ran, so tables that later
 * migrations add are covered the next time this runs.
 */
import { randomBytes } from "node:crypto";
import * as mariadb from "mariadb";
import { connectionOptions, databaseName } from "./mariadbServer";

/** Tables whose rows may be added and read, never changed or removed. */
export const APPEND_ONLY = /^audit_/;
const NOT_FOR_THE_APP = new Set(["_prisma_migrations"]);

const ident = (name: string) => `\`${name.replaceAll("`", "``")}\``;

/** `<database>_app`: one user per database, so parallel test slots never share one. */
export const appUserName = (adminUrl: string) => `${databaseName(adminUrl)}_app`.slice(0, 80);

/** Hosts the user may connect from: loopback for a local server, anywhere (with its password) otherwise. */
function hostsFor(adminUrl: string): string[] {
  const host = new URL(adminUrl).hostname;
  return ["127.0.0.1", "localhost", "[::1]"].includes(host) ? ["127.0.0.1", "localhost"] : ["%"];
}

/** The grants the app user gets on each table of the database, as SQL privilege lists. */
export async function appGrants(conn: mariadb.Connection, database: string): Promise<Map<string, string>> {
  const tables: { name: string }[] = await conn.query(
    "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE'",
    [database],
  );
  const grants = new Map<string, string>();
  for (const { name } of tables) {
    if (NOT_FOR_THE_APP.has(name)) continue;
    grants.set(name, APPEND_ONLY.test(name) ? "SELECT, INSERT" : "SELECT, INSERT, UPDATE, DELETE");
  }
  return grants;
}

/** Replaces whatever `user` was granted with exactly the app's grants on `database`. */
export async function grantAppPrivileges(conn: mariadb.Connection, database: string, user: string, hosts: string[]) {
  const grants = await appGrants(conn, database);
  for (const host of hosts) {
    await conn.query("REVOKE ALL PRIVILEGES, GRANT OPTION FROM ?@?", [user, host]);
    for (const [table, privileges] of grants) {
      await conn.query(`GRANT ${privileges} ON ${ident(database)}.${ident(table)} TO ?@?`, [user, host]);
    }
  }
}

/**
 * Creates (or re-keys) the app user of the admin URL's database, grants it the
 * app's privileges and returns the URL the app should connect with. The
 * password is new on every call, like the demo API key.
 */
export async function provisionAppUser(adminUrl: string): Promise<string> {
  const database = databaseName(adminUrl);
  const user = appUserName(adminUrl);
  const hosts = hostsFor(adminUrl);
  const password = randomBytes(24).toString("base64url");
  const conn = await mariadb.createConnection(connectionOptions(adminUrl));
  try {
    for (const host of hosts) {
      await conn.query("CREATE USER IF NOT EXISTS ?@? IDENTIFIED BY ?", [user, host, password]);
      await conn.query("ALTER USER ?@? IDENTIFIED BY ?", [user, host, password]);
    }
    await grantAppPrivileges(conn, database, user, hosts);
  } finally {
    await conn.end();
  }
  const url = new URL(adminUrl);
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  return url.toString();
}
