import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import v8 from "node:v8";
import vm from "node:vm";
import { env } from "~/env";
import { poolUsage } from "~/server/db";
import { retainedSizes } from "./retained";

/**
 * What the soak benchmark (bench/soak.ts) samples from each app process:
 * heap used after a forced full garbage collection, the resident size and
 * where it goes, and the event loop's delay since the last sample. Only with
 * BENCHMARK_DIAGNOSTICS=1, which the app refuses unless its database is a
 * benchmark one (src/env.ts); otherwise GET /api/diagnostics answers 404.
 */
type State = { delay: IntervalHistogram; gc: () => void };
const globalForDiagnostics = globalThis as unknown as { chargesDiagnostics?: State };

function state(): State {
  if (globalForDiagnostics.chargesDiagnostics) return globalForDiagnostics.chargesDiagnostics;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  // The process was not started with --expose-gc: expose it now and take it from a fresh context.
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  globalForDiagnostics.chargesDiagnostics = { delay, gc };
  return globalForDiagnostics.chargesDiagnostics;
}

/** Starts the event-loop monitor as the process starts, so that the first sample covers its first window. */
export function startDiagnostics(): void {
  if (env.BENCHMARK_DIAGNOSTICS) state();
}

const MIB = 1024 * 1024;
const mib = (bytes: number) => Math.round((bytes / MIB) * 10) / 10;
const ms = (ns: number) => Math.round((ns / 1e6) * 10) / 10;

/** Collects garbage (twice: what the first frees can free more), then measures; the delay window restarts. */
export function sampleDiagnostics() {
  const { delay, gc } = state();
  const delayMs = { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) };
  delay.reset();
  const before = process.memoryUsage();
  const gcStarted = performance.now();
  gc();
  gc();
  const gcMs = Math.round(performance.now() - gcStarted);
  const memory = process.memoryUsage();
  const heap = v8.getHeapStatistics();
  const code = v8.getHeapCodeStatistics();
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, mib(s.space_used_size)]));
  return {
    pid: process.pid,
    uptimeSeconds: Math.round(process.uptime()),
    gcMs,
    /** MiB, as the process ran, before the collection (how far V8 let the heap grow between its own collections). */
    beforeGc: { heapUsed: mib(before.heapUsed), heapTotal: mib(before.heapTotal), rss: mib(before.rss) },
    /** MiB, after the collection. */
    memory: {
      heapUsed: mib(memory.heapUsed),
      heapTotal: mib(memory.heapTotal),
      rss: mib(memory.rss),
      external: mib(memory.external),
      arrayBuffers: mib(memory.arrayBuffers),
      mallocedMemory: mib(heap.malloced_memory),
      peakMallocedMemory: mib(heap.peak_malloced_memory),
      /** Compiled code and bytecode inside the heap, and script sources outside it. */
      code: mib(code.code_and_metadata_size + code.bytecode_and_metadata_size),
      scriptSources: mib(code.external_script_source_size),
      spaces,
    },
    eventLoopDelayMs: delayMs,
    /** Entries of what the process keeps between requests (retained.ts). */
    retained: retainedSizes(),
    pool: { active: poolUsage.active, limit: poolUsage.limit, waited: poolUsage.waited, recent: poolUsage.recent },
  };
}

export type DiagnosticsSample = ReturnType<typeof sampleDiagnostics>;
