import type { PaymentGateway } from "~/server/gateway";

/** The customer ids whose charge answer kills the process (bench/peers.ts sends them in its death round only). */
export const DIE_AFTER_GATEWAY_PREFIX = "cus_die_";

/**
 * BENCHMARKS ONLY (BENCHMARK_DIE_AFTER_GATEWAY, refused outside a benchmark's
 * database): from now on the process SIGKILLs itself the moment the gateway answers a
 * charge for a cus_die_ customer, before its caller can save anything. Done to the
 * gateway itself, under every layer alike, so that each dies at the same point: money
 * moved, its outcome not yet stored.
 */
export function dieAfterCharges(gateway: PaymentGateway): void {
  const charge = gateway.charge.bind(gateway);
  gateway.charge = async (...args) => {
    const charged = await charge(...args);
    if (args[0].customerId?.startsWith(DIE_AFTER_GATEWAY_PREFIX)) process.kill(process.pid, "SIGKILL");
    return charged;
  };
}
