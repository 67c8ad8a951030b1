/**
 * A private MariaDB Galera cluster of three nodes on loopback, for
 * `npm run test:cluster`: each node with its own ports (this TEST_SLOT's
 * cluster band) and datadir, run as the `mysql` user (rsync state
 * transfer fails as root) with datadirs it owns; the first node bootstraps the
 * cluster (--wsrep-new-cluster) and the others join it by state transfer.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import * as mariadb from "mariadb";
import { slotPort, testSlot } from "./config";
import { isRunning, stopChild } from "./processes";

export const GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so";
const SERVER = "/usr/sbin/mariadbd";
const INSTALL_DB = "/usr/bin/mariadb-install-db";

/** Why the cluster cannot run here, or null. */
export function galeraMissing(): string | null {
  if (!existsSync(GALERA_PROVIDER)) return `${GALERA_PROVIDER} is missing: install it with apt-get install galera-4`;
  if (!existsSync(SERVER) || !existsSync(INSTALL_DB))
    return "MariaDB's server is missing: apt-get install mariadb-server";
  if (!spawnSync("sh", ["-c", "command -v rsync"]).stdout.length)
    return "rsync is missing (state transfer): apt-get install rsync";
  if (spawnSync("id", ["-u", "mysql"]).status !== 0)
    return "there is no `mysql` user (Debian's mariadb-server creates it)";
  return null;
}

function mysqlIds() {
  const uid = Number(spawnSync("id", ["-u", "mysql"], { encoding: "utf8" }).stdout.trim());
  const gid = Number(spawnSync("id", ["-g", "mysql"], { encoding: "utf8" }).stdout.trim());
  return { uid, gid };
}

function chownTree(dir: string, uid: number, gid: number) {
  chownSync(dir, uid, gid);
  for (const entry of readdirSync(dir)) {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) chownTree(full, uid, gid);
    else chownSync(full, uid, gid);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class GaleraNode {
  private child?: ChildProcess;

  constructor(
    readonly index: number,
    readonly dataDir: string,
    readonly ports: { sql: number; group: number; ist: number; sst: number },
    private readonly peers: number[],
  ) {}

  get url(): string {
    return `mysql://root@127.0.0.1:${this.ports.sql}/`;
  }

  get socket(): string {
    return path.join(this.dataDir, "mariadb.sock");
  }

  get running(): boolean {
    return this.child !== undefined && isRunning(this.child);
  }

  /** Starts the node: `bootstrap` for the first of a new cluster, else it joins the others (state transfer). */
  async start({ bootstrap }: { bootstrap: boolean }): Promise<void> {
    const { uid, gid } = mysqlIds();
    mkdirSync(this.dataDir, { recursive: true });
    if (bootstrap && !existsSync(path.join(this.dataDir, "mysql"))) {
      const init = spawnSync(
        INSTALL_DB,
        [
          "--no-defaults",
          `--datadir=${this.dataDir}`,
          "--user=mysql",
          "--skip-test-db",
          "--auth-root-authentication-method=normal",
        ],
        { encoding: "utf8" },
      );
      if (init.status !== 0) throw new Error(`mariadb-install-db failed:\n${init.stdout}\n${init.stderr}`);
    }
    chownTree(this.dataDir, uid, gid);
    const group = (port: number) => `127.0.0.1:${port}`;
    const providerOptions = [
      `gmcast.listen_addr=tcp://127.0.0.1:${this.ports.group}`,
      `ist.recv_addr=127.0.0.1:${this.ports.ist}`,
      // A killed node is noticed and left out within seconds (the defaults take 15 s, stalling every commit).
      "evs.keepalive_period=PT0.5S",
      "evs.inactive_check_period=PT0.5S",
      "evs.suspect_timeout=PT2S",
      "evs.inactive_timeout=PT3S",
      "gcache.size=64M",
    ].join(";");
    this.child = spawn(
      SERVER,
      [
        "--no-defaults",
        `--datadir=${this.dataDir}`,
        `--port=${this.ports.sql}`,
        "--bind-address=127.0.0.1",
        `--socket=${this.socket}`,
        `--pid-file=${path.join(this.dataDir, "mariadb.pid")}`,
        `--log-error=${path.join(this.dataDir, "error.log")}`,
        "--user=mysql",
        "--skip-name-resolve",
        "--innodb-buffer-pool-size=64M",
        "--innodb-log-file-size=16M",
        "--max-connections=300",
        "--binlog-format=ROW",
        "--innodb-autoinc-lock-mode=2",
        "--wsrep-on=ON",
        `--wsrep-provider=${GALERA_PROVIDER}`,
        `--wsrep-cluster-name=charges-test${testSlot}`,
        `--wsrep-cluster-address=gcomm://${this.peers.map(group).join(",")}`,
        `--wsrep-node-name=node${this.index}`,
        "--wsrep-node-address=127.0.0.1",
        `--wsrep-node-incoming-address=127.0.0.1:${this.ports.sql}`,
        `--wsrep-provider-options=${providerOptions}`,
        "--wsrep-sst-method=rsync",
        `--wsrep-sst-receive-address=127.0.0.1:${this.ports.sst}`,
        // An autocommit statement that fails certification reaches the app as 1213 instead of being
        // re-run by the server: the claim's own retry is what the cluster test exercises.
        "--wsrep-retry-autocommit=0",
        ...(bootstrap ? ["--wsrep-new-cluster"] : []),
      ],
      { stdio: "ignore", env: { ...process.env, PATH: `${process.env.PATH ?? ""}:/usr/bin:/usr/sbin:/bin` } },
    );
    await this.waitUntilSynced(120_000);
  }

  /** A connection over TCP as root (the cluster's nodes accept it once the first node has been set up). */
  connect(database?: string): Promise<mariadb.Connection> {
    return mariadb.createConnection({
      host: "127.0.0.1",
      port: this.ports.sql,
      user: "root",
      database,
      connectTimeout: 2_000,
    });
  }

  async status(names: string[]): Promise<Record<string, string>> {
    const conn = await this.connect();
    try {
      const rows: { Variable_name: string; Value: string }[] = await conn.query(
        `SHOW GLOBAL STATUS WHERE Variable_name IN (${names.map(() => "?").join(", ")})`,
        names,
      );
      return Object.fromEntries(rows.map((r) => [r.Variable_name, r.Value]));
    } finally {
      await conn.end();
    }
  }

  private async waitUntilSynced(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running)
        throw new Error(`galera node${this.index} exited; see ${path.join(this.dataDir, "error.log")}`);
      try {
        const status = await this.status(["wsrep_local_state_comment", "wsrep_ready"]);
        if (status.wsrep_local_state_comment === "Synced" && status.wsrep_ready === "ON") return;
      } catch {
        // not accepting connections yet (state transfer under way)
      }
      if (Date.now() > deadline) throw new Error(`galera node${this.index} not synced within ${timeoutMs} ms`);
      await sleep(250);
    }
  }

  /** SIGKILL: a node that crashed. */
  async kill(): Promise<void> {
    if (this.child) await stopChild(this.child, "SIGKILL");
  }

  async stop(): Promise<void> {
    if (this.child) await stopChild(this.child);
  }
}

/** Three nodes; `start` builds the cluster from empty datadirs every time. */
export class GaleraCluster {
  readonly nodes: GaleraNode[];

  /**
   * Datadirs under the system's temporary directory, not the checkout: the
   * nodes run as `mysql`, which cannot reach into a checkout under a private
   * home directory (/root is 0700).
   */
  constructor(readonly baseDir = path.join(tmpdir(), `charges-galera${testSlot}`)) {
    const ports = [0, 1, 2].map((i) => ({
      sql: slotPort.cluster(i),
      group: slotPort.cluster(3 + i),
      ist: slotPort.cluster(6 + i),
      sst: slotPort.cluster(9 + i),
    }));
    const groupPorts = ports.map((p) => p.group);
    this.nodes = ports.map((p, i) => new GaleraNode(i, path.join(this.baseDir, `node${i}`), p, groupPorts));
  }

  /** mysql://root@node0,node1,node2/database, starting with node `first` (the order an instance prefers). */
  url(database: string, first = 0): string {
    const order = [0, 1, 2].map((i) => this.nodes[(first + i) % 3]!);
    return `mysql://root@${order.map((n) => `127.0.0.1:${n.ports.sql}`).join(",")}/${database}`;
  }

  async start(): Promise<void> {
    rmSync(this.baseDir, { recursive: true, force: true });
    const [first, ...others] = this.nodes;
    await first!.start({ bootstrap: true });
    // A fresh install lets root in through the unix socket only: open TCP from loopback to it (replicated).
    const conn = await mariadb.createConnection({ socketPath: first!.socket, user: "root" });
    await conn.query("CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'");
    await conn.query("GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION");
    await conn.end();
    for (const node of others) await node.start({ bootstrap: false });
  }

  async clusterSize(): Promise<number> {
    for (const node of this.nodes.filter((n) => n.running)) {
      try {
        return Number((await node.status(["wsrep_cluster_size"])).wsrep_cluster_size);
      } catch {
        // try the next one
      }
    }
    return 0;
  }

  async stop(): Promise<void> {
    for (const node of [...this.nodes].reverse()) await node.stop();
  }
}
