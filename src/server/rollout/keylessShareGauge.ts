import { Gauge } from "prom-client";
import { metrics } from "~/server/observability/metrics";
import { keylessShareByClient } from "./stats";

const DAY_MS = 24 * 3_600_000;
const registered = globalThis as unknown as { keylessShareGauge?: Gauge };

/**
 * The rollout's figure among the app's metrics, read from the database at scrape time: registered by the
 * rollout (which knows how to count it) into the metrics registry, so the metrics module needs no rollout code.
 */
export function ensureKeylessShareGauge(): void {
  registered.keylessShareGauge ??= new Gauge({
    name: "charges_keyless_share",
    help:
      "Share of a client's money requests accepted without an Idempotency-Key (against keyed operations) " +
      "over the last 24 h (0 once enforced)",
    labelNames: ["client_id", "client"] as const,
    registers: [metrics.registry],
    async collect() {
      this.reset();
      for (const c of await keylessShareByClient(new Date(Date.now() - DAY_MS))) {
        this.set({ client_id: String(c.apiClientId), client: c.name }, c.keylessShare);
      }
    },
  });
}
