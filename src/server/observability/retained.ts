/**
 * What this process keeps in memory between requests, by name: each holder
 * registers how many entries it has now, and GET /api/diagnostics reports them
 * beside the heap (bench/soak.ts: a heap that grows shows which of these grew
 * with it). No imports, so that any module can register; kept on globalThis,
 * so that every bundle of the server reports into the same list.
 */
const globalForRetained = globalThis as unknown as { chargesRetained?: Map<string, () => number> };
globalForRetained.chargesRetained ??= new Map();
const holders = globalForRetained.chargesRetained;

export function registerRetained(name: string, size: () => number): void {
  holders.set(name, size);
}

export function retainedSizes(): Record<string, number> {
  return Object.fromEntries([...holders].map(([name, size]) => [name, size()]));
}
