/**
 * The simulated gateway's test cards as an integrator sees them through the API: what each does, the first answer
 * a charge with it gets, and where it works. /docs lists them (src/server/openapi.ts); test/docsSamples.test.ts
 * sends each `example` and checks the documented first answer, through both protocols. How the simulator carries
 * them out: behaviour.ts (its own protocol), refundLedger.ts (refunds), stripe/paymentMethods.ts (Stripe mode).
 */
export type TestCard = {
  /** As written in `card_token`; `<ms>` is a number of milliseconds. */
  token: string;
  /** A concrete token, sent by the test. */
  example: string;
  /** What it does, for people. */
  does: string;
  /** The first answer to a charge with it: status, and for an error its code (and a decline's `decline_code`). */
  answer: { status: number; code?: string; declineCode?: { sim: string; stripe: string } };
  /** Also through GATEWAY=stripe against the simulator; `test mode`: Stripe's own test mode knows it too. */
  stripe: "simulator" | "test mode" | false;
};

export const TEST_CARDS: TestCard[] = [
  {
    token: "tok_visa",
    example: "tok_visa",
    does: "Succeeds. So do `tok_mastercard` and `tok_amex`.",
    answer: { status: 201 },
    stripe: "test mode",
  },
  {
    token: "tok_declined",
    example: "tok_declined",
    does: "Declined: 402 `card_declined` (`decline_code` `card_declined`; through Stripe `generic_decline`), final.",
    answer: { status: 402, code: "card_declined", declineCode: { sim: "card_declined", stripe: "generic_decline" } },
    stripe: "test mode",
  },
  {
    token: "tok_insufficient_funds",
    example: "tok_insufficient_funds",
    does: "Declined: 402 `card_declined` with `decline_code` `insufficient_funds`, final.",
    answer: {
      status: 402,
      code: "card_declined",
      declineCode: { sim: "insufficient_funds", stripe: "insufficient_funds" },
    },
    stripe: "test mode",
  },
  {
    token: "tok_slow_<ms>",
    example: "tok_slow_1500",
    does:
      "Succeeds after `<ms>` (at most 120000). A retry while it runs gets 409 `request_in_progress`, then the " +
      "stored 201 as a replay: try a client timeout shorter than `<ms>`.",
    answer: { status: 201 },
    stripe: "simulator",
  },
  {
    token: "tok_late_<ms>",
    example: "tok_late_1000",
    does:
      "Reaches the gateway's processor `<ms>` after it arrived (a request held up on its way): charged then, or " +
      "refused as expired if the app's deadline for it has passed (then, once nothing can still be made, the final " +
      "500 `request_abandoned` with `gateway: refused`).",
    answer: { status: 201 },
    stripe: false,
  },
  {
    token: "tok_error",
    example: "tok_error",
    does:
      "The gateway fails and charges nothing: 503 `gateway_unavailable` (retry, same key) until the operation is " +
      "final, then 500 `request_abandoned` (`retryable: false`, replayed): no charge was made.",
    answer: { status: 503, code: "gateway_unavailable" },
    stripe: "simulator",
  },
  {
    token: "tok_charge_then_error",
    example: "tok_charge_then_error",
    does:
      "The gateway charges, then fails: 503 `gateway_unavailable`; a retry with the same key gets the 201 of the " +
      "one charge made.",
    answer: { status: 503, code: "gateway_unavailable" },
    stripe: "simulator",
  },
  {
    token: "tok_refund_slow_<ms>",
    example: "tok_refund_slow_1500",
    does: "The charge succeeds; its refunds answer after `<ms>`.",
    answer: { status: 201 },
    stripe: "simulator",
  },
  {
    token: "tok_refund_error",
    example: "tok_refund_error",
    does:
      "The charge succeeds; its refunds fail refunding nothing: 503 `gateway_unavailable`, then the final 500 " +
      "`request_abandoned`.",
    answer: { status: 201 },
    stripe: "simulator",
  },
  {
    token: "tok_refund_then_error",
    example: "tok_refund_then_error",
    does: "The charge succeeds; its refunds refund, then fail: 503; a retry gets the 201 of the one refund.",
    answer: { status: 201 },
    stripe: "simulator",
  },
  {
    token: "any other",
    example: "tok_no_such_card",
    does: "Declined: 402 `card_declined` with `decline_code` `invalid_token`, final.",
    answer: { status: 402, code: "card_declined", declineCode: { sim: "invalid_token", stripe: "invalid_token" } },
    stripe: "simulator",
  },
];
