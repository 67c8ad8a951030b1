import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { startApp, type Service } from "../scripts/lib/processes";
import { chargeBody, closeConnections, newApiClient, postCharge, uniqueKey, waitFor } from "./helpers";

const PORT = Number(process.env.TEST_APP_PORT ?? 3100) + 4;
const LOGS = path.resolve(import.meta.dirname, `../.data/test-logs${process.env.TEST_SLOT ?? ""}`);
const LOG_FILE = path.join(LOGS, "app.log");

type Line = Record<string, unknown>;
const lines = (): Line[] =>
  readFileSync(LOG_FILE, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Line);

let app: Service;
let apiKey: string;
let clientId: number;
before(async () => {
  rmSync(LOGS, { recursive: true, force: true });
  mkdirSync(LOGS, { recursive: true });
  ({ apiKey, id: clientId } = await newApiClient("logging"));
  app = await startApp({ port: PORT, env: { ...process.env }, log: LOG_FILE });
});
after(async () => {
  await app?.stop();
  await closeConnections();
});

describe("structured logs (pino)", () => {
  test("an unknown gateway outcome is one JSON line with the request's key, client and record; no secret", async () => {
    const key = uniqueKey("logged");
    const body = chargeBody({ card_token: "tok_error" });
    const res = await postCharge({ apiKey, key, body, baseUrl: `http://127.0.0.1:${PORT}` });
    assert.equal(res.status, 503);
    const unknownOutcome = (l: Line) => String(l.msg).startsWith("gateway outcome unknown");
    const line = await waitFor("the log line", async () => lines().find(unknownOutcome));
    assert.equal(line.level, 40, "warn");
    assert.equal(line.idempotencyKey, key);
    assert.equal(line.apiClientId, clientId);
    assert.match(String(line.recordId), /^\d+$/);
    assert.equal(line.method, "POST");
    assert.equal(line.path, "/api/charges");
    assert.equal(line.requestId, res.headers.get("request-id"), "the line names the answer's Request-Id");
    assert.equal(typeof line.time, "string");
    assert.equal(typeof (line.err as Line)?.message, "string");

    const everything = readFileSync(LOG_FILE, "utf8");
    assert.ok(!everything.includes(apiKey), "the API key is never logged");
    assert.ok(!everything.includes("tok_error"), "nor the card token");
    assert.ok(!everything.includes("Bearer"), "nor any authorization header");
    // Stack frames name functions, never files: a path tells whoever reads the logs how the machine is laid out.
    assert.ok(String((line.err as Line).stack ?? "").length > 0, "the error's frames are logged");
    assert.doesNotMatch(everything, /\.(m?js|ts|tsx):\d+/, "no file:line locations");
    assert.doesNotMatch(everything, /\((\/|file:|node:)/, "no paths in frames");
  });
});
