/**
 * The HTTP clients integrators already use, configured as docs/retries.md says (docs/recipes/): Python requests
 * with urllib3's Retry (Debian's python3-requests, installed by .ci/run), ky, axios with axios-retry, and the
 * project's SDK. Each, on a slow card it times out on and on a card whose gateway never charges, must make at
 * most one charge per operation and end with a final answer within the finality bound: the stored 201, or the
 * final 500 request_abandoned (`retryable: false`).
 *
 * An app instance of its own with short timings (REAP_AFTER_MS 4 s, a 1.5 s gateway timeout) and no sweeper, as
 * in test/finality.test.ts: the clients' own retries must bring the final answer.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import * as axiosRecipe from "../docs/recipes/axiosRetry";
import * as kyRecipe from "../docs/recipes/ky";
import * as sdkRecipe from "../docs/recipes/sdk";
import { chargeBody, closeConnections, gatewayCharges, newApiClient } from "./helpers";
import { BOUND_MS, startShortTimingsApp } from "./shortTimings";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 14;
const URL = `http://127.0.0.1:${PORT}`;
/** The client's per-attempt timeout on the slow card: well below the card's 1 s. */
const SHORT_TIMEOUT_MS = 300;

let apiKey: string;
let app: Awaited<ReturnType<typeof startShortTimingsApp>>;
before(async () => {
  ({ apiKey } = await newApiClient("retry clients"));
  app = await startShortTimingsApp(PORT);
});
after(async () => {
  await app?.stop();
  await closeConnections();
});

/** What a client ended with: the answer's status and body, whether it was a replay, how many attempts it made. */
type Outcome = {
  status: number;
  body: { id?: string; error?: { code: string; retryable: boolean } };
  replayed: boolean;
  attempts: number;
};

/** One charge operation through a client, under a key made once: its outcome, and how long it took. */
type Client = (body: ReturnType<typeof chargeBody>, key: string, timeoutMs: number) => Promise<Outcome>;

const clients: Record<string, Client> = {
  "Python requests + urllib3 Retry": async (body, key, timeoutMs) => {
    const recipe = path.join(import.meta.dirname, "../docs/recipes/urllib3_retry.py");
    const { stdout } = await promisify(execFile)("/usr/bin/python3", [recipe], {
      env: {
        ...process.env,
        CHARGES_URL: URL,
        CHARGES_API_KEY: apiKey,
        CHARGES_PATH: "/api/charges",
        CHARGES_BODY: JSON.stringify(body),
        CHARGES_IDEMPOTENCY_KEY: key,
        CHARGES_READ_TIMEOUT: String(timeoutMs / 1000),
      },
    });
    return JSON.parse(stdout);
  },
  ky: async (body, key, timeoutMs) => {
    let attempts = 1;
    const api = kyRecipe.chargesApi(URL, apiKey, { timeoutMs, onRetry: () => attempts++ });
    const res = await kyRecipe.createCharge(api, body, key);
    const replayed = res.headers.get("Idempotent-Replay") === "true";
    return { status: res.status, body: await res.json(), replayed, attempts };
  },
  "axios + axios-retry": async (body, key, timeoutMs) => {
    let attempts = 1;
    const api = axiosRecipe.chargesApi(URL, apiKey, { timeoutMs, onRetry: () => attempts++ });
    const res = await axiosRecipe.createCharge(api, body, key);
    return { status: res.status, body: res.data, replayed: res.headers["idempotent-replay"] === "true", attempts };
  },
  "the SDK": async (body, key, timeoutMs) => {
    const result = await sdkRecipe.createCharge(sdkRecipe.chargesApi(URL, apiKey, { timeoutMs }), body, key);
    const answer = result.ok ? { id: result.charge.id } : { error: result.error as Outcome["body"]["error"] };
    return { status: result.status, body: answer, replayed: result.replayed, attempts: result.attempts };
  },
};

for (const [name, client] of Object.entries(clients)) {
  describe(`${name}, configured as docs/retries.md says`, () => {
    test("a slow card it times out on: retried with the same key, one charge, the stored 201", async () => {
      const body = chargeBody({ card_token: "tok_slow_1000" });
      const started = Date.now();
      const answer = await client(body, randomUUID(), SHORT_TIMEOUT_MS);
      assert.equal(answer.status, 201, JSON.stringify(answer));
      assert.ok(answer.attempts > 1, `it retried: ${answer.attempts} attempts`);
      assert.ok(Date.now() - started <= BOUND_MS, `final after ${Date.now() - started} ms`);
      const charges = await gatewayCharges(body.customer_id);
      assert.equal(charges.length, 1, "one charge for the operation");
    });

    test("a card whose gateway never charges: retried through 503 and 409, then the final 500, no charge", async () => {
      const body = chargeBody({ card_token: "tok_error" });
      const started = Date.now();
      const answer = await client(body, randomUUID(), 10_000);
      assert.equal(answer.status, 500, JSON.stringify(answer));
      assert.deepEqual(answer.body.error && [answer.body.error.code, answer.body.error.retryable], [
        "request_abandoned",
        false,
      ]);
      assert.ok(answer.attempts > 1, `it retried: ${answer.attempts} attempts`);
      assert.ok(Date.now() - started <= BOUND_MS, `final after ${Date.now() - started} ms`);
      assert.equal((await gatewayCharges(body.customer_id)).length, 0);
    });
  });
}
