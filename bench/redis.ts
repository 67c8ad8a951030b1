/**
 * Redis for `npm run bench:peers`: Debian's redis-server on a loopback port of
 * this TEST_SLOT, in a directory of its own, with Redis's own defaults for
 * durability (RDB snapshots after 3600 s and 1 change, 300 s and 100, 60 s and
 * 10 000; no append-only file), stated on the command line so that no system
 * configuration changes them. `crash` is a SIGKILL and a start on the same
 * directory: what a crashed (or OOM-killed, or failed-over) Redis comes back with.
 *
 * Benchmarks only: needs the Debian package (`apt-get install -y redis-server`).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { connect } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stopChild } from "../scripts/lib/processes";

const REDIS = "/usr/bin/redis-server";

/** Resolves once something accepts TCP connections on the port (redis-server answers nothing over HTTP). */
async function waitForPort(port: number, timeoutMs: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server on :${port} exited with code ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.end();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`redis-server on :${port} did not listen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startRedis(port: number) {
  if (spawnSync(REDIS, ["--version"]).status !== 0) {
    throw new Error(
      `bench:peers needs redis-server at ${REDIS}: apt-get install -y --no-install-recommends redis-server`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), "charges-bench-redis-"));
  const args = [
    ...["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no"],
    ...["--save", "3600 1 300 100 60 10000", "--appendonly", "no", "--logfile", join(dir, "redis.log")],
  ];
  const start = async () => {
    const child = spawn(REDIS, args, { stdio: ["ignore", "ignore", "inherit"] });
    await waitForPort(port, 10_000, child);
    return child;
  };
  let child = await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: () => child.pid!,
    /** SIGKILL, then a start on the same data directory; resolves once it listens again. */
    crash: async () => {
      await stopChild(child, "SIGKILL");
      child = await start();
    },
    stop: async () => {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
