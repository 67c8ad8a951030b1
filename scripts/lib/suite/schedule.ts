/**
 * Runs a suite's lanes at most `concurrency` at once, each on a TEST_SLOT of its own: a lane takes a free slot
 * when it starts and gives it back when it ends, so that no two running lanes share ports or databases. Pure
 * scheduling (the lane's work is `runOne`), so that the rule is unit-tested without starting anything.
 */
export async function runOnSlots<L, R>(
  lanes: readonly L[],
  slots: readonly number[],
  concurrency: number,
  runOne: (lane: L, slot: number) => Promise<R>,
): Promise<R[]> {
  if (slots.length === 0) throw new Error("no TEST_SLOT to run the lanes on");
  const free = [...slots];
  const width = Math.max(1, Math.min(concurrency, slots.length));
  const results = new Array<R>(lanes.length);
  let next = 0;
  const worker = async () => {
    while (next < lanes.length) {
      const index = next++;
      const slot = free.shift()!;
      try {
        results[index] = await runOne(lanes[index]!, slot);
      } finally {
        free.push(slot);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, lanes.length) }, worker));
  return results;
}

/** TEST_LANE_SLOTS ("1,2,3"): distinct slots 0-9. */
export function parseSlots(value: string): number[] {
  const parts = value.split(",").map((s) => s.trim());
  const slots = parts.map(Number);
  if (slots.length === 0 || parts.some((s) => !/^\d$/.test(s)) || new Set(slots).size < slots.length)
    throw new Error(`TEST_LANE_SLOTS must list distinct slots 0-9, e.g. 1,2,3 (got "${value}")`);
  return slots;
}
