/**
 * The Stripe-compatible simulator's test payment methods. The `pm_card_*` ids are
 * Stripe's own test payment methods (they work in Stripe's test mode too); the
 * `pm_sim_*` ones exist only here, for the fault tests: Stripe has no test card
 * that is slow or fails with a 500.
 *
 *   pm_card_visa, pm_card_mastercard, pm_card_amex    succeed
 *   pm_card_chargeDeclined                            402 card_declined / generic_decline
 *   pm_card_chargeDeclinedInsufficientFunds           402 card_declined / insufficient_funds
 *   pm_sim_slow_<ms>                                  succeeds; the answer comes <ms> later (at most 120000)
 *   pm_sim_search_lag_<ms>                            succeeds; search sees it only <ms> later
 *   pm_sim_error                                      500 api_error, nothing charged (saved under the key)
 *   pm_sim_charge_then_error                          charges, then 500 api_error (saved under the key)
 *   pm_sim_rate_limited                               429 rate_limit, nothing charged or saved
 *   anything else                                     400 resource_missing (No such PaymentMethod)
 */
import { MAX_SLOW_MS } from "../behaviour";

export type CardBehaviour =
  | { kind: "succeed"; delayMs: number; searchLagMs?: number }
  | { kind: "decline"; code: string; declineCode?: string; message: string }
  | { kind: "error" }
  | { kind: "charge_then_error" }
  | { kind: "rate_limited" }
  | { kind: "unknown" };

const FIXED: Record<string, CardBehaviour> = {
  pm_card_visa: { kind: "succeed", delayMs: 0 },
  pm_card_mastercard: { kind: "succeed", delayMs: 0 },
  pm_card_amex: { kind: "succeed", delayMs: 0 },
  pm_card_chargeDeclined: {
    kind: "decline",
    code: "card_declined",
    declineCode: "generic_decline",
    message: "Your card was declined.",
  },
  pm_card_chargeDeclinedInsufficientFunds: {
    kind: "decline",
    code: "card_declined",
    declineCode: "insufficient_funds",
    message: "Your card has insufficient funds.",
  },
  pm_sim_error: { kind: "error" },
  pm_sim_charge_then_error: { kind: "charge_then_error" },
  pm_sim_rate_limited: { kind: "rate_limited" },
};

export function cardBehaviour(paymentMethod: string): CardBehaviour {
  const slow = /^pm_sim_slow_(\d{1,6})$/.exec(paymentMethod);
  if (slow) return { kind: "succeed", delayMs: Math.min(Number(slow[1]), MAX_SLOW_MS) };
  const lag = /^pm_sim_search_lag_(\d{1,7})$/.exec(paymentMethod);
  if (lag) return { kind: "succeed", delayMs: 0, searchLagMs: Number(lag[1]) };
  if (/^pm_sim_refund_/.test(paymentMethod)) return { kind: "succeed", delayMs: 0 }; // its refunds misbehave
  return FIXED[paymentMethod] ?? { kind: "unknown" };
}
