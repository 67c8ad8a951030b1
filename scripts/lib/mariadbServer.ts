import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import path from "node:path";
import * as mariadb from "mariadb";
import { mysqlConnectionOptions } from "../../src/lib/mysqlUrl";
import { stopChild } from "./processes";

/** Connection options for a mysql:// URL, without its database unless asked for. */
export function connectionOptions(url: string, withDatabase = false): mariadb.ConnectionConfig {
  const { database, ...server } = mysqlConnectionOptions(url);
  return { ...server, database: withDatabase ? database : undefined, connectTimeout: 2_000 };
}

export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

export async function isReachable(url: string): Promise<boolean> {
  try {
    const conn = await mariadb.createConnection(connectionOptions(url));
    await conn.end();
    return true;
  } catch {
    return false;
  }
}

export async function waitUntilReachable(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await isReachable(url))) {
    if (Date.now() > deadline)
      throw new Error(`MariaDB at ${new URL(url).host} did not come up within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function findBinary(name: string): string | undefined {
  for (const dir of [...(process.env.PATH ?? "").split(":"), "/usr/sbin", "/usr/local/sbin"]) {
    const candidate = path.join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * A MariaDB server of our own, with its data under a git-ignored folder. Used
 * when DATABASE_URL points at nothing, and by the fault tests that restart the
 * database while requests are in flight.
 */
export class PrivateMariaDb {
  private child?: ChildProcess;

  constructor(
    readonly dataDir: string,
    readonly port: number,
  ) {}

  static available(): boolean {
    return Boolean(findBinary("mariadbd") ?? findBinary("mysqld"));
  }

  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}/`;
  }

  async start(): Promise<void> {
    const server = findBinary("mariadbd") ?? findBinary("mysqld");
    const installer = findBinary("mariadb-install-db") ?? findBinary("mysql_install_db");
    if (!server || !installer)
      throw new Error("no MariaDB/MySQL server binary found (install the mariadb-server package)");
    if (!existsSync(path.join(this.dataDir, "mysql"))) {
      mkdirSync(this.dataDir, { recursive: true });
      const init = spawnSync(
        installer,
        [
          "--no-defaults",
          `--datadir=${this.dataDir}`,
          "--auth-root-authentication-method=normal",
          "--skip-test-db",
          `--user=${process.env.USER ?? "root"}`,
        ],
        { encoding: "utf8" },
      );
      if (init.status !== 0) throw new Error(`mariadb-install-db failed:\n${init.stdout}\n${init.stderr}`);
    }
    this.child = spawn(
      server,
      [
        "--no-defaults",
        `--datadir=${this.dataDir}`,
        `--port=${this.port}`,
        "--bind-address=127.0.0.1",
        `--socket=${path.join(this.dataDir, "mariadb.sock")}`,
        `--pid-file=${path.join(this.dataDir, "mariadb.pid")}`,
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=256M",
        "--max-connections=500",
        "--user=root",
      ],
      { stdio: "ignore", detached: false },
    );
    await waitUntilReachable(this.url, 30_000);
  }

  /** Kill -9: what a crashed or restarted database looks like to its clients. */
  async kill(): Promise<void> {
    if (this.child) await stopChild(this.child, "SIGKILL");
  }

  /** Also safe after kill(), which is where a failed fault test leaves it. */
  async stop(): Promise<void> {
    if (this.child) await stopChild(this.child);
  }
}

/**
 * Makes sure a server answers at `url`: the configured one, or else a private
 * instance on the same port when a server binary is installed.
 */
export async function ensureServer(url: string, dataDir: string): Promise<PrivateMariaDb | undefined> {
  if (await isReachable(url)) return undefined;
  const u = new URL(url);
  if (!["127.0.0.1", "localhost"].includes(u.hostname) || !PrivateMariaDb.available()) {
    throw new Error(
      `Cannot reach MariaDB/MySQL at ${u.host} (DATABASE_URL).\n` +
        "Start your database server, point DATABASE_URL at one, " +
        "or install MariaDB (Debian: apt-get install mariadb-server) " +
        "so that a private instance can be started under .data/.",
    );
  }
  console.log(`MariaDB is not running at ${u.host}; starting a private instance in ${dataDir}`);
  const server = new PrivateMariaDb(dataDir, Number(u.port || 3306));
  await server.start();
  return server;
}

export async function createDatabase(url: string, { dropFirst = false } = {}): Promise<void> {
  const name = databaseName(url).replaceAll("`", "");
  const conn = await mariadb.createConnection(connectionOptions(url));
  try {
    if (dropFirst) await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await conn.query(`CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await conn.end();
  }
}
