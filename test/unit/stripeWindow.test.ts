/**
 * Through Stripe, "nothing was made" waits STRIPE_SEARCH_CONSISTENCY_MS after an operation's last attempt (Stripe
 * cannot be told a deadline): a window too short to cover a request held up on its way is refused at start.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseEnv, STRIPE_MIN_CONSISTENCY_MS } from "~/env";

const stripe = (window: number, apiBase?: string) => ({
  NODE_ENV: "production",
  GATEWAY: "stripe",
  STRIPE_SECRET_KEY: "sk_test_window",
  STRIPE_SEARCH_CONSISTENCY_MS: String(window),
  ...(apiBase && { STRIPE_API_BASE: apiBase }),
});

test("a Stripe window below the safe minimum is refused at start, naming the variable and the minimum", () => {
  assert.throws(() => parseEnv(stripe(5_000)), /STRIPE_SEARCH_CONSISTENCY_MS: must be at least 600000/);
  assert.throws(() => parseEnv(stripe(STRIPE_MIN_CONSISTENCY_MS - 1, "https://api.stripe.com")), /STRIPE_SEARCH/);
  assert.equal(parseEnv(stripe(STRIPE_MIN_CONSISTENCY_MS)).STRIPE_SEARCH_CONSISTENCY_MS, STRIPE_MIN_CONSISTENCY_MS);
  const { STRIPE_SEARCH_CONSISTENCY_MS: _, ...unset } = stripe(0);
  assert.equal(parseEnv(unset).STRIPE_SEARCH_CONSISTENCY_MS, 3_600_000, "the default: an hour");
});

test("the simulator's Stripe mode (tests) may shorten it; the simulator's own protocol ignores it", () => {
  assert.equal(parseEnv(stripe(1_000, "http://127.0.0.1:4010")).STRIPE_SEARCH_CONSISTENCY_MS, 1_000);
  assert.doesNotThrow(() => parseEnv({ NODE_ENV: "production", GATEWAY: "sim", STRIPE_SEARCH_CONSISTENCY_MS: "5" }));
});
