/**
 * Security headers on pages and API answers, and the tRPC endpoint's limits,
 * over HTTP against the real server.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { APP_URL, closeConnections, db } from "./helpers";
import { Browser, createStaffAccount, signedIn } from "./staffHttp";

after(closeConnections);

function nonceOf(csp: string | null): string {
  const match = /script-src 'self' 'nonce-([A-Za-z0-9+/=]+)' 'strict-dynamic'/.exec(csp ?? "");
  assert.ok(match, `CSP with a script nonce: ${csp}`);
  return match[1]!;
}

describe("security headers", () => {
  test("pages: a CSP with a fresh nonce on every script tag; no framing, nosniff, a referrer policy", async () => {
    const first = await fetch(`${APP_URL}/admin/login`);
    const second = await fetch(`${APP_URL}/admin/login`);
    const csp = first.headers.get("content-security-policy");
    const nonce = nonceOf(csp);
    assert.notEqual(nonceOf(second.headers.get("content-security-policy")), nonce, "a new nonce per response");
    assert.match(csp!, /frame-ancestors 'none'/);
    assert.match(csp!, /object-src 'none'/);
    assert.match(csp!, /style-src 'self' 'nonce-/);
    // No exception on the sign-in page (test/httpEdges.test.ts); the signed-in pages allow style attributes.
    assert.ok(!/unsafe-eval|unsafe-inline/.test(csp!));
    const html = await first.text();
    const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    assert.ok(scripts.length > 0);
    for (const tag of scripts) assert.ok(tag.includes(`nonce="${nonce}"`), `script without the nonce: ${tag}`);
    assert.equal(first.headers.get("x-content-type-options"), "nosniff");
    assert.equal(first.headers.get("referrer-policy"), "same-origin");
    assert.equal(first.headers.get("x-frame-options"), "DENY");
  });

  test("HSTS only when the request came over HTTPS (as a TLS-terminating proxy says)", async () => {
    assert.equal((await fetch(`${APP_URL}/admin/login`)).headers.get("strict-transport-security"), null);
    const https = await fetch(`${APP_URL}/admin/login`, { headers: { "X-Forwarded-Proto": "https" } });
    assert.match(https.headers.get("strict-transport-security") ?? "", /^max-age=63072000; includeSubDomains$/);
    assert.match(https.headers.get("content-security-policy") ?? "", /upgrade-insecure-requests/);
  });

  test("API answers: nosniff, and a CSP that lets a JSON answer load nothing", async () => {
    const res = await fetch(`${APP_URL}/api/health`);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.equal(res.headers.get("content-security-policy"), "default-src 'none'; frame-ancestors 'none'");
    const charge = await fetch(`${APP_URL}/api/charges`, { method: "POST", body: "{}" });
    assert.equal(charge.status, 401);
    assert.equal(charge.headers.get("x-content-type-options"), "nosniff");
  });
});

describe("the tRPC endpoint", () => {
  test("an internal error's message never reaches the browser", async () => {
    const browser = await signedIn(await createStaffAccount("engineer"));
    // A row another tool wrote with a zero date (MariaDB accepts it): reading it fails inside the data layer.
    const label = `zero-date-${Date.now()}`;
    await db.$executeRaw`INSERT INTO audit_events (created_at, action, actor_type, actor_label)
      VALUES ('0000-00-00 00:00:00', 'logout', 'cli', ${label})`;
    try {
      const res = await browser.query("audit.list", { actor: label, limit: 5 });
      assert.equal(res.status, 500);
      assert.equal(res.error?.message, "Internal server error.");
      assert.equal(res.error?.data.stack, undefined);
      assert.ok(!/invalid|time|prisma|date/i.test(JSON.stringify(res.error)), JSON.stringify(res.error));
    } finally {
      await db.$executeRaw`DELETE FROM audit_events WHERE actor_label = ${label}`;
    }
  });

  test("answers are Cache-Control: no-store", async () => {
    const browser = await signedIn(await createStaffAccount("support"));
    const res = await browser.query("sweep.status");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal((await new Browser().query("sweep.status")).headers.get("cache-control"), "no-store");
  });

  test("a batch of more than 10 calls is refused", async () => {
    const browser = await signedIn(await createStaffAccount("support"));
    const call = (n: number) => {
      const paths = Array.from({ length: n }, () => "sweep.status").join(",");
      const input = encodeURIComponent(
        JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [i, {}]))),
      );
      return fetch(`${APP_URL}/api/trpc/${paths}?batch=1&input=${input}`, { headers: browser.headers() });
    };
    assert.equal((await call(10)).status, 200);
    const tooMany = await call(11);
    assert.equal(tooMany.status, 400);
    assert.match(await tooMany.text(), /Batch call exceeds maximum size/);
  });

  test("a body over 64 KiB is refused with 413, declared or not", async () => {
    const browser = await signedIn(await createStaffAccount("engineer"));
    const big = JSON.stringify({ json: { mode: "x".repeat(70_000) } });
    const declared = await fetch(`${APP_URL}/api/trpc/rollout.setMode`, {
      method: "POST",
      headers: browser.headers({ "Content-Type": "application/json" }),
      body: big,
    });
    assert.equal(declared.status, 413);
    const streamed = await fetch(`${APP_URL}/api/trpc/rollout.setMode`, {
      method: "POST",
      headers: browser.headers({ "Content-Type": "application/json" }),
      body: new Blob([big]).stream(),
      duplex: "half",
    } as RequestInit);
    assert.equal(streamed.status, 413);
  });

  test("mutations must come from the dashboard's own pages (Sec-Fetch-Site, else Origin)", async () => {
    const browser = await signedIn(await createStaffAccount("engineer"));
    const host = new URL(APP_URL).host;
    const attempt = (headers: Record<string, string>, mode = "optional") =>
      fetch(`${APP_URL}/api/trpc/rollout.setMode`, {
        method: "POST",
        headers: { Cookie: browser.cookie!, "Content-Type": "application/json", ...headers },
        body: JSON.stringify({ json: { mode, reason: "hardening test" } }),
      }).then((r) => r.status);
    assert.equal(await attempt({ "Sec-Fetch-Site": "cross-site" }), 403);
    assert.equal(await attempt({ "Sec-Fetch-Site": "same-site" }), 403);
    assert.equal(await attempt({ Origin: "https://evil.example" }), 403);
    assert.equal(await attempt({}), 403, "neither header: refused");
    // Accepted: a real switch each time (a switch to the mode in force would be refused as a conflict).
    assert.equal(await attempt({ Origin: `http://${host}` }, "required"), 200);
    assert.equal(await attempt({ "Sec-Fetch-Site": "same-origin" }, "optional"), 200);
  });
});
