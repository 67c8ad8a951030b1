/**
 * The edges of HTTP through the real server (issue #43, items 5 to 7): paths that are not valid percent-encoding,
 * bodies nested too deep or trickled, what /api/health tells a stranger, the sign-in page's CSP.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import {
  APP_URL,
  chargeBody,
  closeConnections,
  newApiClient,
  postCharge,
  postTo,
  waitFor,
  withMetricsCredential,
} from "./helpers";
import { createStaffAccount, signedIn } from "./staffHttp";

let apiKey: string;
before(async () => ({ apiKey } = await newApiClient("http edges")));
after(closeConnections);

const app = new URL(APP_URL);

/** A request whose path goes on the wire exactly as written (fetch would leave it alone too, but say so). */
function raw(method: string, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
    const req = httpRequest({ host: app.hostname, port: app.port, method, path, headers }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("a path that is not valid percent-encoding", () => {
  const paths = [
    ["GET", "/api/refunds/%ZZ"],
    ["GET", "/api/charges/%ZZ"],
    ["GET", "/api/trpc/%ZZ"],
    ["POST", "/api/trpc/%ZZ"],
    ["GET", "/api/%ZZ"],
    ["GET", "/api/no/such/%E0%A4%A"],
    ["GET", "/admin/charges/%ZZ"],
    ["GET", "/admin/%ff"],
  ] as const;
  for (const [method, path] of paths) {
    test(`${method} ${path}: 400 invalid_path in the error format, with the security headers`, async () => {
      const res = await raw(method, path, { Authorization: `Bearer ${apiKey}` });
      assert.equal(res.status, 400, res.text.slice(0, 300));
      assert.match(String(res.headers["content-type"]), /application\/json/);
      const body = JSON.parse(res.text);
      assert.equal(body.error.code, "invalid_path");
      assert.match(body.error.doc_url, /invalid_path$/);
      assert.equal(res.headers["x-content-type-options"], "nosniff");
      assert.equal(res.headers["x-frame-options"], "DENY");
      assert.equal(res.headers["referrer-policy"], "same-origin");
      assert.equal(res.headers["content-security-policy"], "default-src 'none'; frame-ancestors 'none'");
    });
  }
});

/** `[[[[…]]]]` this deep. */
const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

describe("JSON nested 30 000 levels deep", () => {
  test("from a signed-in staff member to tRPC: 400, never a stack overflow", async () => {
    const browser = await signedIn(await createStaffAccount("support"));
    const res = await fetch(`${APP_URL}/api/trpc/refunds.create`, {
      method: "POST",
      headers: browser.headers({ "Content-Type": "application/json" }),
      body: `{"json":${deep(30_000)}}`,
    });
    const text = await res.text();
    assert.equal(res.status, 400, text.slice(0, 300));
    assert.doesNotMatch(text, /call stack/i);
    assert.equal(JSON.parse(text).error.code, "invalid_json");
    // In a query's input too.
    const query = await fetch(`${APP_URL}/api/trpc/sweep.status?input=${encodeURIComponent(deep(1_000))}`, {
      headers: browser.headers(),
    });
    assert.equal(query.status, 400);
    assert.doesNotMatch(await query.text(), /call stack/i);
  });

  test("to the public API and sign-in: 400 invalid_json", async () => {
    const charge = await postCharge({ apiKey, rawBody: `{"amount_cents":${deep(5_000)}}` });
    assert.equal(charge.status, 400, charge.text.slice(0, 300));
    assert.equal(charge.json.error.code, "invalid_json");
    const refund = await postTo("/api/refunds", { apiKey, rawBody: `{"charge":${deep(30_000)}}` });
    assert.equal(refund.json?.error?.code, refund.status === 413 ? "body_too_large" : "invalid_json", refund.text);
    const login = await postTo("/api/auth/login", {
      rawBody: `{"email":${deep(1_000)}}`,
      headers: { "Sec-Fetch-Site": "same-origin" },
    });
    assert.equal(login.status, 400, login.text);
    assert.equal(login.json.error.code, "invalid_json");
    // A body of ordinary depth still goes through.
    assert.equal((await postCharge({ apiKey, body: chargeBody() })).status, 201);
  });
});

/**
 * Sends the head of a POST with a 200-byte body, then one byte a second, until the server answers; the status
 * line and how many body bytes were sent by then.
 */
function trickle(path: string, headers: Record<string, string>): Promise<{ statusLine: string; sent: number }> {
  const LENGTH = 200;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(app.port), app.hostname);
    let sent = 0;
    let answer = "";
    let timer: NodeJS.Timeout | undefined;
    const done = (error?: Error) => {
      clearInterval(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve({ statusLine: answer.split("\r\n")[0]!, sent });
    };
    socket.on("connect", () => {
      const head = Object.entries({ ...headers, "Content-Type": "application/json", "Content-Length": LENGTH })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join("");
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${app.host}\r\n${head}\r\n`);
      timer = setInterval(() => {
        if (sent >= LENGTH) return done(new Error("the whole body went without an answer"));
        socket.write(sent === 0 ? "{" : " ");
        sent++;
      }, 1_000);
    });
    socket.on("data", (chunk) => {
      answer += chunk.toString("latin1");
      if (answer.includes("\r\n")) done();
    });
    socket.on("error", done);
    socket.on("close", () => (answer ? done() : done(new Error("closed without an answer"))));
  });
}

describe("a body trickled a byte at a time", () => {
  // BODY_READ_TIMEOUT_MS is 3 s in tests: the answer comes long before the 200 bytes could arrive.
  for (const [path, auth] of [
    ["/api/auth/login", false],
    ["/api/charges", true],
    ["/api/refunds", true],
    ["/api/gateway/events", false],
  ] as const) {
    test(`${path}: 408 after the bound, the body still unsent`, async () => {
      const headers: Record<string, string> = { "Sec-Fetch-Site": "same-origin", "Idempotency-Key": `slow-${path}` };
      if (auth) headers.Authorization = `Bearer ${apiKey}`;
      const { statusLine, sent } = await trickle(path, headers);
      assert.match(statusLine, /^HTTP\/1\.1 408 /);
      assert.ok(sent < 200, `answered after ${sent} of 200 bytes`);
    });
  }
});

describe("an idle keep-alive connection", () => {
  test("is kept past Node's 5 s default, and says for how long: a next request on it is answered", async () => {
    const socket = connect({ host: app.hostname, port: Number(app.port) });
    let received = "";
    socket.on("data", (chunk) => (received += chunk));
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    const ask = async () => {
      received = "";
      socket.write(`GET /api/health HTTP/1.1\r\nHost: ${app.host}\r\nConnection: keep-alive\r\n\r\n`);
      await waitFor("an answer", async () => /\r\n\r\n/.test(received), 10_000);
      return received;
    };
    const first = await ask();
    assert.match(first, /^HTTP\/1\.1 200 /);
    assert.match(first, /keep-alive: timeout=65/i, "the hint that lets a client close first");
    const idle = await Promise.race([new Promise((r) => setTimeout(r, 6_000, "open")), closed.then(() => "closed")]);
    assert.equal(idle, "open", "the server kept the connection through 6 s of idling");
    assert.match(await ask(), /^HTTP\/1\.1 200 /);
    socket.destroy();
  });
});

describe("GET /api/health", () => {
  test("up or down to a stranger; the figures to staff and the metrics credential", async () => {
    const stranger = await fetch(`${APP_URL}/api/health`);
    assert.equal(stranger.status, 200);
    assert.deepEqual(await stranger.json(), { status: "ok" });
    const credential = await (await fetch(`${APP_URL}/api/health`, withMetricsCredential)).json();
    assert.equal(typeof credential.pool.limit, "number");
    const browser = await signedIn(await createStaffAccount("support"));
    const staff = await (await browser.page("/api/health")).json();
    assert.equal(typeof staff.pool.limit, "number");
  });
});

describe("the sign-in page's CSP", () => {
  test("allows no inline style at all (it has no style attribute); signed-in pages keep attributes only", async () => {
    const login = await fetch(`${APP_URL}/admin/login`);
    const csp = login.headers.get("content-security-policy") ?? "";
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.doesNotMatch(await login.text(), /\sstyle="/, "the page has no style attribute");
  });
});
