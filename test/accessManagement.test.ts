/**
 * Onboarding API clients and managing staff, over HTTP (tRPC, as the
 * dashboard does) and from the command line (npm run clients / staff).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { serverScriptArgs } from "../scripts/lib/processes";
import { randomUUID } from "node:crypto";
import { hostname, userInfo } from "node:os";
import { after, describe, test } from "node:test";
import { chargeBody, closeConnections, db, postCharge, uniqueKey } from "./helpers";
import { createStaffAccount, signedIn } from "./staffHttp";

after(closeConnections);

const tryKey = (apiKey: string) =>
  postCharge({ apiKey, key: uniqueKey("access"), body: { amount_cents: -1 } }).then((r) => r.status);

/**
 * Runs a CLI as a child process. Asynchronously: a spawnSync would stop this process's event loop for seconds,
 * while the server closes the idle keep-alive socket of the last request; fetch would then send the next request
 * on a socket whose close it had not yet read ("other side closed").
 */
function cli(
  script: "clients" | "staff",
  args: string[],
  input?: string,
): Promise<{ status: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [...serverScriptArgs(`scripts/${script}.ts`), ...args], {
    env: process.env,
  });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
  child.stdin.end(input ?? "");
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, out, err }));
  });
}

describe("API clients", () => {
  test("a new client's key charges; rotation keeps the old key in its grace; revocation is at once", async () => {
    const engineer = await signedIn(await createStaffAccount("engineer"));
    const name = `Acme ${randomUUID().slice(0, 6)}`;
    const created = await engineer.mutate("apiClients.create", { name, contactEmail: "ops@acme.example" });
    assert.equal(created.status, 200);
    const { clientId, apiKey } = created.data;
    assert.equal((await postCharge({ apiKey, key: uniqueKey(), body: chargeBody() })).status, 201);
    const stored = await db.apiKey.findFirstOrThrow({ where: { apiClientId: clientId } });
    assert.notEqual(stored.keyHash, apiKey);
    assert.ok(
      !JSON.stringify((await engineer.query("apiClients.list")).data).includes(apiKey),
      "the key is shown once",
    );

    const rotated = await engineer.mutate("apiClients.rotateKey", { clientId, graceHours: 24 });
    assert.equal(rotated.status, 200);
    assert.equal(await tryKey(apiKey), 400, "the old key works during the grace period");
    assert.equal(await tryKey(rotated.data.apiKey), 400);
    const listed = (await engineer.query("apiClients.list")).data.find((c: { id: number }) => c.id === clientId);
    const old = listed.keys.find((k: { id: number }) => k.id === stored.id);
    assert.equal(old.state, "grace");
    assert.ok(Math.abs(new Date(old.expiresAt).getTime() - Date.now() - 24 * 3_600_000) < 60_000);

    assert.equal((await engineer.mutate("apiClients.revokeKey", { keyId: stored.id })).status, 200);
    assert.equal(await tryKey(apiKey), 401, "the instance that revoked it refuses it at once");
    assert.equal((await engineer.mutate("apiClients.revokeKey", { keyId: stored.id })).error?.code, "CONFLICT");

    const actions = await db.auditEvent.findMany({
      where: { targetType: "api_client", targetId: String(clientId) },
      orderBy: { id: "asc" },
    });
    assert.deepEqual(
      actions.map((a) => a.action),
      ["api_client.created", "api_key.issued", "api_key.rotated", "api_key.revoked"],
    );
  });

  test("support cannot manage clients; unknown ids are a clear NOT_FOUND", async () => {
    const support = await signedIn(await createStaffAccount("support"));
    assert.equal((await support.mutate("apiClients.create", { name: "x", contactEmail: null })).status, 403);
    const engineer = await signedIn(await createStaffAccount("engineer"));
    const missing = await engineer.mutate("apiClients.issueKey", { clientId: 999_999 });
    assert.equal(missing.error?.code, "NOT_FOUND");
    assert.equal(missing.error?.message, "There is no API client 999999.");
  });

  test("npm run clients: create prints a working key; rotate and revoke-key work by id", async () => {
    const created = await cli("clients", ["create", "--name", "CLI client", "--email", "cli@example.com"]);
    assert.equal(created.status, 0, created.err);
    const apiKey = /\(shown once\): (\S+)/.exec(created.out)![1]!;
    const clientId = /client #(\d+)/.exec(created.out)![1]!;
    assert.equal(await tryKey(apiKey), 400);
    const rotated = await cli("clients", ["rotate", clientId, "--grace-hours", "0"]);
    assert.equal(rotated.status, 0, rotated.err);
    const keyId = /key (\d+) \(shown once\)/.exec(rotated.out)![1]!;
    assert.equal((await cli("clients", ["revoke-key", keyId])).status, 0);
    assert.equal((await cli("clients", ["revoke-key", keyId])).err.trim(), "error: This key is already revoked.");
    const audit = await db.auditEvent.findFirstOrThrow({
      where: { action: "api_client.created", targetId: clientId },
    });
    assert.match(audit.actorLabel!, /^cli:/);
  });
});

describe("staff", () => {
  test("npm run staff: create the first engineer, who can then sign in", async () => {
    const email = `first-${randomUUID().slice(0, 8)}@example.com`;
    const password = `correct horse ${randomUUID()}`;
    const created = await cli(
      "staff",
      ["create", "--email", email, "--name", "First", "--role", "engineer", "--password-stdin"],
      password,
    );
    assert.equal(created.status, 0, created.err);
    const browser = await signedIn({ id: 0, email, password });
    // Created with a password someone typed on a terminal: its owner chooses their own at the first sign-in.
    assert.equal((await browser.query("staff.list")).status, 403);
    const changed = await browser.mutate("account.changePassword", { current: password, next: `own ${randomUUID()}` });
    assert.equal(changed.status, 200, JSON.stringify(changed.error));
    assert.equal((await browser.query("staff.list")).status, 200);
    const again = await cli("staff", ["create", "--email", email, "--name", "Again", "--role", "engineer"]);
    assert.equal(again.status, 1);
  });

  test("a CLI action is audited under the person who ran it: --actor, or the OS user at this host", async () => {
    const createdBy = async (extra: string[]) => {
      const email = `cli-${randomUUID().slice(0, 8)}@example.com`;
      const created = await cli("staff", ["create", "--email", email, "--name", "CLI", "--role", "support", ...extra]);
      assert.equal(created.status, 0, created.err);
      const where = { action: "staff.created", details: { contains: email } };
      return (await db.auditEvent.findFirstOrThrow({ where })).actorLabel;
    };
    assert.equal(await createdBy([]), `cli:${userInfo().username}@${hostname()}`);
    assert.equal(await createdBy(["--actor", "alice@example.com"]), "cli:alice@example.com");
  });

  test("an engineer adds a staff member (first password shown once) and cannot disable themselves", async () => {
    const account = await createStaffAccount("engineer");
    const engineer = await signedIn(account);
    const email = `new-${randomUUID().slice(0, 8)}@example.com`;
    const created = await engineer.mutate("staff.create", { email, name: "New", role: "support" });
    const first = { id: created.data.userId, email, password: created.data.temporaryPassword };
    const newcomer = await signedIn(first);
    // The first password must be replaced before anything else: every page leads to Account, every procedure
    // but the account's own is refused.
    const refused = await newcomer.query("sweep.status");
    assert.equal(refused.status, 403);
    assert.match(refused.error!.message, /new password/);
    const page = await newcomer.page("/admin/customers");
    assert.equal(page.status, 307);
    assert.equal(new URL(page.headers.get("location")!, "http://x").pathname, "/admin/account");
    assert.equal((await newcomer.query("account.me")).data.mustChangePassword, true);
    const next = `own-${randomUUID()}`;
    const changed = await newcomer.mutate("account.changePassword", { current: first.password, next });
    assert.equal(changed.status, 200, JSON.stringify(changed.error));
    assert.equal((await newcomer.query("sweep.status")).status, 200);
    assert.equal((await newcomer.page("/admin/customers")).status, 200);
    const self = await engineer.mutate("staff.setDisabled", { userId: account.id, disabled: true });
    assert.equal(self.status, 400);
    assert.match(self.error!.message, /cannot change your own role or disable yourself/);
  });
});
