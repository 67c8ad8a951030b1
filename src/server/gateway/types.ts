/**
 * What the app needs from a payment provider. The simulated gateway
 * (src/gateway-sim) speaks this over HTTP; a real provider gets an adapter
 * implementing the same interface.
 */
export type GatewayChargeRequest = {
  amountCents: number;
  currency: string;
  cardToken: string;
  customerId: string | null;
};

export type GatewayCharge = {
  id: string;
  status: "succeeded" | "declined";
  amountCents: number;
  currency: string;
  customerId: string | null;
  declineCode: string | null;
  message: string | null;
};

export interface PaymentGateway {
  /**
   * Charges once per idempotency key: calling again with the same key returns
   * the same charge and never moves money twice.
   * @throws GatewayOutcomeUnknownError when it cannot tell whether money moved.
   */
  charge(request: GatewayChargeRequest, options: { idempotencyKey: string; timeoutMs: number }): Promise<GatewayCharge>;
  /** The charge made under this key, or null when the gateway never charged it. */
  findByIdempotencyKey(idempotencyKey: string): Promise<GatewayCharge | null>;
}

/** Timeout, network error or 5xx: the charge may or may not have happened. */
export class GatewayOutcomeUnknownError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GatewayOutcomeUnknownError";
  }
}
