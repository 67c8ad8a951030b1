/**
 * `npm run db:migrate`: for a real server. Applies the migrations as the admin
 * user, on the database `npm start` uses (DATABASE_ADMIN_URL, else DATABASE_URL) and, when DATABASE_APP_USER is
 * set (`name` or `name@host`), gives that existing user exactly the app's
 * grants on the database (scripts/lib/appUser.ts). Run it after every deploy
 * that brings migrations.
 */
import * as mariadb from "mariadb";
import { adminDatabaseUrl, loadDotEnv } from "./lib/config";
import { grantAppPrivileges } from "./lib/appUser";
import { connectionOptions, databaseName } from "./lib/mariadbServer";
import { applyMigrations } from "./lib/migrate";

loadDotEnv();
const adminUrl = adminDatabaseUrl();

const applied = await applyMigrations(adminUrl);
console.log(applied.length > 0 ? `applied: ${applied.join(", ")}` : "no migration to apply");

const appUser = process.env.DATABASE_APP_USER;
if (appUser) {
  const [user, host = "%"] = appUser.split("@");
  const conn = await mariadb.createConnection(connectionOptions(adminUrl));
  try {
    await grantAppPrivileges(conn, databaseName(adminUrl), user!, [host]);
  } finally {
    await conn.end();
  }
  console.log(`granted the app's privileges on ${databaseName(adminUrl)} to '${user}'@'${host}'`);
}
