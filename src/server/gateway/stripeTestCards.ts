/**
 * The app's card tokens as Stripe payment methods. The first five are Stripe's
 * own test payment methods (they behave the same in Stripe's test mode); every
 * other token names a simulator-only one, `tok_<name>` -> `pm_sim_<name>`
 * (`tok_slow_<ms>`, `tok_error`, `tok_charge_then_error`, `tok_rate_limited`,
 * `tok_search_lag_<ms>`), since Stripe has no test card that is slow or fails
 * with a 500. Stripe itself answers those with "No such PaymentMethod", which the
 * adapter reports as a decline (invalid_token), like an unknown token anywhere.
 */
const STRIPE_TEST_PAYMENT_METHODS: Record<string, string> = {
  tok_visa: "pm_card_visa",
  tok_mastercard: "pm_card_mastercard",
  tok_amex: "pm_card_amex",
  tok_declined: "pm_card_chargeDeclined",
  tok_insufficient_funds: "pm_card_chargeDeclinedInsufficientFunds",
};

export function stripePaymentMethod(cardToken: string): string {
  return STRIPE_TEST_PAYMENT_METHODS[cardToken] ?? cardToken.replace(/^tok_/, "pm_sim_");
}
