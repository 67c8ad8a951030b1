/**
 * A reverse proxy in front of the app for `npm run bench:storm -- --proxy`:
 * nginx, as a production deployment would put in front of Next.js. Why it
 * matters under a storm (bench/README.md, 2026-12-04): the app is one Node.js
 * process, and libuv accepts one connection per event-loop turn, so when a
 * thousand clients reconnect at once (every attempt that times out closes its
 * connection) the app's accept queue overflows and each dropped handshake
 * costs its client TCP's one-second retransmission. nginx accepts them all
 * and keeps its own connections to the app open across requests.
 *
 * Benchmarks only: needs the Debian package (`apt-get install -y nginx-light`).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stopChild, waitForHttp } from "../scripts/lib/processes";

const NGINX = "/usr/sbin/nginx";

function config(dir: string, port: number, upstreams: URL[]): string {
  return `
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 8192; multi_accept on; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream app {
    ${upstreams.map((u) => `server ${u.host};`).join("\n    ")}
    # Connections to the app stay open between requests: the app sees no reconnection storm.
    keepalive 1024;
    keepalive_requests 100000;
    keepalive_timeout 60s;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_read_timeout 60s;
      # A client that gives up does not close the proxy's connection to the app (which would then be
      # reopened); the app finishes the attempt, which its idempotency record makes harmless.
      proxy_ignore_client_abort on;
    }
  }
}
`;
}

/**
 * nginx on `port`, forwarding to the app instances at `upstreamUrls` (round robin), answering once the app answers
 * through it.
 */
export async function startProxy(upstreamUrls: string[], port: number) {
  if (spawnSync(NGINX, ["-v"]).status !== 0) {
    throw new Error(`--proxy needs nginx at ${NGINX}: apt-get install -y --no-install-recommends nginx-light`);
  }
  const dir = mkdtempSync(join(tmpdir(), "charges-bench-nginx-"));
  const file = join(dir, "nginx.conf");
  const upstreams = upstreamUrls.map((u) => new URL(u));
  writeFileSync(file, config(dir, port, upstreams));
  const child = spawn(NGINX, ["-c", file, "-p", dir], { stdio: ["ignore", "ignore", "inherit"] });
  const url = `http://127.0.0.1:${port}`;
  // Through the proxy to the app: nginx answers 502 until it can reach it.
  await waitForHttp(`${url}/api/health`, 10_000, child);
  return {
    url,
    pid: child.pid!,
    stop: async () => {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
