/**
 * The simulated gateway's test cards, in the spirit of Stripe's magic tokens.
 *   tok_visa, tok_mastercard, tok_amex  succeed
 *   tok_declined                        declines (card_declined)
 *   tok_insufficient_funds              declines (insufficient_funds)
 *   tok_slow_<ms>                       succeeds, answering after <ms> (at most 120000)
 *   tok_late_<ms>                       processed <ms> after it arrived, then charged (a request held up on
 *                                       its way, or in the processor's queue); Charge-Not-After is checked then
 *   tok_error                           fails with 500 and charges nothing (outcome unknown to the caller)
 *   tok_charge_then_error               charges, then fails with 500 (outcome unknown; the money moved)
 *   tok_refund_slow_<ms>, tok_refund_error, tok_refund_then_error
 *                                       succeed; their refunds misbehave (./refundLedger.ts)
 *   anything else                       declines (invalid_token)
 * What each does as an integrator sees it through the API, listed on /docs: testCards.ts.
 */
export type Behaviour =
  | { kind: "succeed"; delayMs: number; processAfterMs?: number }
  | { kind: "decline"; code: string; message: string }
  | { kind: "error" }
  | { kind: "charge_then_error" };

export const MAX_SLOW_MS = 120_000;

export function behaviourFor(cardToken: string): Behaviour {
  const slow = /^tok_slow_(\d{1,6})$/.exec(cardToken);
  if (slow) return { kind: "succeed", delayMs: Math.min(Number(slow[1]), MAX_SLOW_MS) };
  const late = /^tok_late_(\d{1,6})$/.exec(cardToken);
  if (late) return { kind: "succeed", delayMs: 0, processAfterMs: Math.min(Number(late[1]), MAX_SLOW_MS) };
  if (/^tok_refund_/.test(cardToken)) return { kind: "succeed", delayMs: 0 };
  switch (cardToken) {
    case "tok_visa":
    case "tok_mastercard":
    case "tok_amex":
      return { kind: "succeed", delayMs: 0 };
    case "tok_declined":
      return { kind: "decline", code: "card_declined", message: "Your card was declined." };
    case "tok_insufficient_funds":
      return { kind: "decline", code: "insufficient_funds", message: "Your card has insufficient funds." };
    case "tok_error":
      return { kind: "error" };
    case "tok_charge_then_error":
      return { kind: "charge_then_error" };
    default:
      return { kind: "decline", code: "invalid_token", message: "No such card token." };
  }
}
