/**
 * bench/peers.ts's arithmetic, kept pure so that test/unit/peersVerdict.test.ts
 * can pin it down: what a fault round did to money, and whether this project's
 * layer met the targets against the peers.
 */

/** One operation of a fault round: its own customer id, and whether its client got a final answer in time. */
export type Operation = { customerId: string; settled: boolean };

export type FaultCounts = {
  /** Gateway charges beyond the first for one operation (every operation has its own customer). */
  duplicates: number;
  /** Gateway charges with no charge row in the app: money moved that the app never knew of. */
  unrecorded: number;
  /** Operations whose client's deadline ran out without a final answer (in flight, or unanswered, to the end). */
  blocked: number;
};

export function faultCounts(
  operations: Operation[],
  gatewayCharges: { id: string; customerId: string }[],
  recordedGatewayIds: ReadonlySet<string>,
): FaultCounts {
  const perCustomer = new Map<string, number>();
  for (const c of gatewayCharges) perCustomer.set(c.customerId, (perCustomer.get(c.customerId) ?? 0) + 1);
  const duplicates = operations.reduce((n, op) => n + Math.max(0, (perCustomer.get(op.customerId) ?? 0) - 1), 0);
  const unrecorded = gatewayCharges.filter((c) => !recordedGatewayIds.has(c.id)).length;
  const blocked = operations.filter((op) => !op.settled).length;
  return { duplicates, unrecorded, blocked };
}

export const addCounts = (a: FaultCounts, b: FaultCounts): FaultCounts => ({
  duplicates: a.duplicates + b.duplicates,
  unrecorded: a.unrecorded + b.unrecorded,
  blocked: a.blocked + b.blocked,
});

export type Speed = { fresh: number; replay: number };
export type Check = { target: string; value: string; met: boolean };

/**
 * The speed targets for this layer: fresh-key req/s >= 0.9 x the
 * fastest peer's, replay req/s >= 1.0 x the fastest peer's. A stack that is
 * not idempotent (no layer at all) is no peer.
 */
export function speedChecks(ours: Speed, peers: Record<string, Speed>): Check[] {
  const names = Object.keys(peers);
  if (names.length === 0) throw new Error("speedChecks: no peers measured");
  const fastest = (of: keyof Speed) => names.reduce((a, b) => (peers[b]![of] > peers[a]![of] ? b : a));
  const ratio = (of: keyof Speed, needed: number): Check => {
    const peer = fastest(of);
    const r = ours[of] / peers[peer]![of];
    return { target: `${of} req/s >= ${needed} x the fastest peer's (${peer})`, value: r.toFixed(3), met: r >= needed };
  };
  return [ratio("fresh", 0.9), ratio("replay", 1.0)];
}

/** The correctness target: 0 duplicates, 0 unrecorded charges, 0 blocked operations in every fault round. */
export function faultChecks(ourFaults: Record<string, FaultCounts>): Check[] {
  const rounds = Object.entries(ourFaults);
  if (rounds.length === 0) throw new Error("faultChecks: no fault round ran");
  return rounds.map(([round, c]) => ({
    target: `${round}: 0 duplicates / 0 unrecorded / 0 blocked`,
    value: `${c.duplicates} / ${c.unrecorded} / ${c.blocked}`,
    met: c.duplicates === 0 && c.unrecorded === 0 && c.blocked === 0,
  }));
}
