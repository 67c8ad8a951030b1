import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { openSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "../..");
export const bin = (name: string) => path.join(root, "node_modules/.bin", name);

type Env = Record<string, string | undefined>;

export type Service = { name: string; url: string; child: ChildProcess; stop: () => Promise<void> };

export async function waitForHttp(url: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`process for ${url} exited with code ${child.exitCode}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (res.status < 500) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Whether a child process still runs: it has ended neither by an exit code nor by a signal. */
export const isRunning = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/**
 * `signal` (SIGTERM by default), then SIGKILL if the process has not exited
 * within 5 s. A process that already ended, by code or by signal, is left be:
 * its "exit" event has fired and waiting for it again would never return.
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (!isRunning(child)) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** True when something already answers at `url` (a leftover process would otherwise pass for the new one). */
async function answers(url: string): Promise<boolean> {
  return fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
    () => true,
    () => false,
  );
}

/**
 * Where a service's output goes: the terminal; with `quiet`, only its errors;
 * with `log`, everything appended to that file (fault runs, whose services
 * warn on every injected fault).
 */
export type Output = { quiet?: boolean; log?: string };
function stdio({ quiet = false, log }: Output): StdioOptions {
  if (log) {
    const fd = openSync(log, "a");
    return ["ignore", fd, fd];
  }
  return ["ignore", quiet ? "ignore" : "inherit", "inherit"];
}

async function startService(
  name: string,
  command: string,
  args: string[],
  env: Env,
  healthUrl: string,
  baseUrl: string,
  output: Output,
) {
  if (await answers(healthUrl))
    throw new Error(`${name}: ${baseUrl} already answers; stop the process left on that port first`);
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: stdio(output) });
  const service = { name, url: baseUrl, child, stop: () => stopChild(child) } as Service;
  // A service that never became healthy is stopped, not left behind on its port: on a loaded machine a fault
  // run's restarted app once missed the 120 s and outlived the run, and the next run on that slot found the port taken.
  const ready = waitForHttp(healthUrl, 120_000, child).catch(async (error) => {
    await service.stop();
    throw error;
  });
  return { service, ready };
}

/** The simulated payment gateway (both protocols), on its own port with its own database. */
export async function startGateway(
  opts: {
    port: number;
    databaseUrl: string;
    /** Stripe mode: how long a new PaymentIntent stays invisible to search (the simulator's default otherwise). */
    searchLagMs?: number;
  } & Output,
): Promise<Service> {
  const url = `http://127.0.0.1:${opts.port}`;
  const lag = opts.searchLagMs === undefined ? {} : { GATEWAY_SEARCH_LAG_MS: String(opts.searchLagMs) };
  const { service, ready } = await startService(
    "gateway",
    process.execPath,
    serverScriptArgs("src/gateway-sim/server.ts"),
    { GATEWAY_PORT: String(opts.port), GATEWAY_DATABASE_URL: opts.databaseUrl, ...lag },
    `${url}/health`,
    url,
    opts,
  );
  await ready;
  return service;
}

/**
 * How long the app keeps an idle connection: longer than the idle timeout of a proxy or client in front of it (60 s
 * for AWS's load balancers and nginx's upstream keep-alive), so that the client closes one first. Node's 5 s
 * default let a client send a POST on a connection the server was closing (ECONNRESET: a charge the client cannot
 * tell was received; an e2e test once met it after 5 s of idling).
 */
export const APP_KEEP_ALIVE_MS = 65_000;

/** The Next.js app from the production build (`next build` must have run). */
export async function startApp(opts: { port: number; env: Env } & Output): Promise<Service> {
  const url = `http://127.0.0.1:${opts.port}`;
  const { service, ready } = await startService(
    "app",
    bin("next"),
    ["start", "-p", String(opts.port), "-H", "127.0.0.1", "--keepAliveTimeout", String(APP_KEEP_ALIVE_MS)],
    opts.env,
    `${url}/api/health`,
    url,
    opts,
  );
  await ready;
  return service;
}

/**
 * Node flags for server code run outside Next.js: `server-only` (imported by the
 * database client) resolves to its empty module under the react-server condition.
 */
export const SERVER_CODE_FLAGS = ["--conditions=react-server"];
/** Node flags for a bundle of server code (bundles.ts): its failures name the .ts lines, by its source map. */
export const BUNDLE_FLAGS = [...SERVER_CODE_FLAGS, "--enable-source-maps"];

/** The server scripts that test runs start from bundles (bundles.ts): the workers, the gateway, the CLIs tests run. */
export const SERVER_SCRIPTS = [
  ...["src/worker/sweeper.ts", "src/worker/dispatcher.ts", "src/gateway-sim/server.ts"],
  ...["scripts/clients.ts", "scripts/staff.ts", "scripts/reconcile.ts", "scripts/webhooks.ts", "scripts/migrate.ts"],
];
export const bundleOf = (dir: string, file: string) => path.join(dir, file.replace(/\.tsx?$/, ".mjs"));

/**
 * node's arguments for a server script, as ONE process: node with tsx's loader, not tsx's CLI, which runs the script
 * in a child of its own. A SIGKILL (a fault, or stopChild's last resort) is not relayed to that child: it went on as
 * an orphan, still working on the database (a fault run's "killed" dispatchers all kept posting, one with another
 * run's settings). In a test run that bundled it (TEST_BUNDLES), its bundle.
 */
export function serverScriptArgs(script: string): string[] {
  const bundles = process.env.TEST_BUNDLES;
  if (bundles) return [...BUNDLE_FLAGS, bundleOf(bundles, script)];
  return ["--import", "tsx", ...SERVER_CODE_FLAGS, script];
}

function startServerScript(name: string, script: string, env: Env, output: Output): Service {
  const child = spawn(process.execPath, serverScriptArgs(script), {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: stdio(output),
  });
  return { name, url: "", child, stop: () => stopChild(child) };
}

export const startSweeper = (env: Env, output: Output = {}) =>
  startServerScript("sweeper", "src/worker/sweeper.ts", env, output);

/** The webhook dispatcher (src/worker/dispatcher.ts): posts due deliveries; any number may run. */
export const startDispatcher = (env: Env, output: Output = {}) =>
  startServerScript("dispatcher", "src/worker/dispatcher.ts", env, output);

/** Runs a command to completion, inheriting output; rejects on a non-zero exit. */
export function run(command: string, args: string[], env: Env = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command.includes("/") ? command : bin(command), args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: "inherit",
    });
    child.on("exit", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")} failed (${signal ?? `exit ${code}`})`)),
    );
  });
}
