import { env } from "~/env";
import { HttpPaymentGateway } from "./httpGateway";
import { StripePaymentGateway } from "./stripeGateway";
import type { PaymentGateway } from "./types";

/** The one place that knows which provider charges go to (GATEWAY); everything else sees a PaymentGateway. */
function configuredGateway(): PaymentGateway {
  switch (env.GATEWAY) {
    case "sim":
      return new HttpPaymentGateway(env.GATEWAY_URL);
    case "stripe":
      return new StripePaymentGateway({
        secretKey: env.STRIPE_SECRET_KEY!, // required by env.ts when GATEWAY=stripe
        apiBase: env.STRIPE_API_BASE,
        searchConsistencyMs: env.STRIPE_SEARCH_CONSISTENCY_MS,
      });
  }
}

export const gateway: PaymentGateway = configuredGateway();
export * from "./types";
export { deriveGatewayKey, metadataFor } from "./deriveGatewayKey";
export { takesGatewayEvents, verifyGatewayEvent, type GatewayEvent } from "./events";
