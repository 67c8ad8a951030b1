import type { PaymentGateway } from "~/server/gateway/types";

/** The customer ids whose charge answer kills the process (bench/peers.ts sends them in its death round only). */
export const DIE_AFTER_GATEWAY_PREFIX = "cus_die_";

/**
 * BENCHMARKS ONLY (BENCHMARK_DIE_AFTER_GATEWAY, refused outside a benchmark's
 * database): the process SIGKILLs itself the moment the gateway answers a
 * charge for a cus_die_ customer, before its caller can save anything. Done
 * here, under every layer alike, so that each dies at the same point: money
 * moved, its outcome not yet stored.
 */
export function dyingAfterCharges(gateway: PaymentGateway): PaymentGateway {
  return new Proxy(gateway, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== "charge") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: Parameters<PaymentGateway["charge"]>) => {
        const charged = await target.charge(...args);
        if (args[0].customerId?.startsWith(DIE_AFTER_GATEWAY_PREFIX)) process.kill(process.pid, "SIGKILL");
        return charged;
      };
    },
  });
}
