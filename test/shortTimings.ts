/**
 * An app instance of its own with short timings (REAP_AFTER_MS 4 s, a 1.5 s gateway timeout) and no sweeper, for
 * the tests of finality (test/finality, test/retryClients): an operation the gateway never carries out must be final
 * within BOUND_MS of its first attempt, whatever the client does.
 */
import { gateway } from "~/server/gateway";
import { startAppInstance } from "./helpers";

export const TIMINGS = { REAP_AFTER_MS: 4_000, GATEWAY_TIMEOUT_MS: 1_500, LEASE_MARGIN_MS: 500 };
/** The finality bound from the first attempt; through Stripe, plus its late-landing window. */
export const BOUND_MS = TIMINGS.REAP_AFTER_MS + TIMINGS.GATEWAY_TIMEOUT_MS + gateway.lateLandingMs + 10_000;

export const startShortTimingsApp = (port: number) =>
  startAppInstance(port, Object.fromEntries(Object.entries(TIMINGS).map(([name, ms]) => [name, String(ms)])));
