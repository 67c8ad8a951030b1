import { env } from "~/env";
import { HttpPaymentGateway } from "./httpGateway";
import type { PaymentGateway } from "./types";

export const gateway: PaymentGateway = new HttpPaymentGateway(env.GATEWAY_URL);
export * from "./types";
export { deriveGatewayKey } from "./deriveGatewayKey";
