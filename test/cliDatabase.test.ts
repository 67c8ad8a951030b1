/**
 * The command-line tools work on the database `npm start` serves: two people following the README once made
 * API clients and staff in another one (the CLIs read DATABASE_URL, `npm start` DATABASE_ADMIN_URL first).
 * Each CLI runs here as a child process against a scratch database chosen the way `npm start` chooses it
 * (devConfig), with a decoy in the other variable that would take the rows if the rule differed.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { devConfig } from "../scripts/lib/config";
import { connectionOptions, createDatabase, databaseName } from "../scripts/lib/mariadbServer";
import { applyMigrations } from "../scripts/lib/migrate";
import { serverScriptArgs } from "../scripts/lib/processes";

/** This run's own database (the test runner's admin URL): the decoy. */
const runDatabase = process.env.DATABASE_ADMIN_URL ?? process.env.DATABASE_URL!;
const scratchUrl = (suffix: string) => {
  const url = new URL(runDatabase);
  url.pathname = `/${databaseName(runDatabase)}_${suffix}`;
  return url.toString();
};
const migrated = scratchUrl("cli");
const empty = scratchUrl("cli_migrate");

type Vars = { DATABASE_ADMIN_URL?: string; DATABASE_URL?: string };

/** The database `npm start` would use with these variables (and no .env in the way: the variables win). */
function startsDatabase(vars: Vars): string {
  const saved = { DATABASE_ADMIN_URL: process.env.DATABASE_ADMIN_URL, DATABASE_URL: process.env.DATABASE_URL };
  const set = (v: Vars) => {
    for (const name of ["DATABASE_ADMIN_URL", "DATABASE_URL"] as const) {
      if (v[name] === undefined) delete process.env[name];
      else process.env[name] = v[name];
    }
  };
  set(vars);
  try {
    return devConfig().databaseUrl;
  } finally {
    set(saved);
  }
}

function cli(script: string, args: string[], vars: Vars): Promise<{ status: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_ADMIN_URL;
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [...serverScriptArgs(`scripts/${script}.ts`), ...args], {
    env: { ...env, ...vars },
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stdin.end();
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, out }));
  });
}

async function count(url: string, sql: string, params: unknown[]): Promise<number> {
  const conn = await mariadb.createConnection(connectionOptions(url, true));
  try {
    const [row] = await conn.query(sql, params);
    return Number(row.n);
  } finally {
    await conn.end();
  }
}
const clientsNamed = (url: string, name: string) =>
  count(url, "SELECT COUNT(*) AS n FROM api_clients WHERE name = ?", [name]);

before(async () => {
  await createDatabase(migrated, { dropFirst: true });
  await applyMigrations(migrated);
  await createDatabase(empty, { dropFirst: true });
});

after(async () => {
  const conn = await mariadb.createConnection(connectionOptions(runDatabase));
  try {
    for (const url of [migrated, empty]) await conn.query(`DROP DATABASE IF EXISTS \`${databaseName(url)}\``);
  } finally {
    await conn.end();
  }
});

describe("the CLIs use npm start's database", () => {
  // An installation's .env: the admin URL for npm start, DATABASE_URL left over (or the app's own connection).
  const both = { DATABASE_ADMIN_URL: migrated, DATABASE_URL: runDatabase };

  test("DATABASE_ADMIN_URL and DATABASE_URL both set: clients, staff and reconcile use the admin one", async () => {
    assert.equal(startsDatabase(both), migrated);
    const name = `CLI database ${randomUUID().slice(0, 8)}`;
    const created = await cli("clients", ["create", "--name", name], both);
    assert.equal(created.status, 0, created.out);
    assert.equal(await clientsNamed(migrated, name), 1, "the client is in npm start's database");
    assert.equal(await clientsNamed(runDatabase, name), 0, "and not in DATABASE_URL's");
    assert.match((await cli("clients", ["list"], both)).out, new RegExp(name));

    const email = `cli-${randomUUID().slice(0, 8)}@example.com`;
    const staff = await cli("staff", ["create", "--email", email, "--name", "First", "--role", "engineer"], both);
    assert.equal(staff.status, 0, staff.out);
    const staffSql = "SELECT COUNT(*) AS n FROM staff_users WHERE email = ?";
    assert.equal(await count(migrated, staffSql, [email]), 1);
    assert.equal(await count(runDatabase, staffSql, [email]), 0);

    // An empty window far in the past: nothing to compare, but the run is stored where it ran.
    const window = ["--since", "2000-01-01T00:00:00Z", "--until", "2000-01-01T01:00:00Z"];
    const reconciled = await cli("reconcile", window, both);
    assert.equal(reconciled.status, 0, reconciled.out);
    const runsSql = "SELECT COUNT(*) AS n FROM reconciliation_runs WHERE window_start = '2000-01-01 00:00:00'";
    assert.equal(await count(migrated, runsSql, []), 1);
    assert.equal(await count(runDatabase, runsSql, []), 0);
  });

  test("only DATABASE_URL set (an older .env): db:migrate and clients use it, as npm start does", async () => {
    const only = { DATABASE_URL: empty };
    assert.equal(startsDatabase(only), empty);
    const migrate = await cli("migrate", [], only);
    assert.equal(migrate.status, 0, migrate.out);
    assert.match(migrate.out, /applied: /);
    const name = `CLI older env ${randomUUID().slice(0, 8)}`;
    const created = await cli("clients", ["create", "--name", name], only);
    assert.equal(created.status, 0, created.out);
    assert.equal(await clientsNamed(empty, name), 1);
  });
});
