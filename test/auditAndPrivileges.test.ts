/**
 * The audit log (over HTTP: what engineers see, and a lock that keeps mode
 * switches' `from` right) and the app's least-privilege database user.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { APP_GRANTS } from "../scripts/lib/appUser";
import { SERVER_CODE_FLAGS } from "../scripts/lib/processes";
import { after, describe, test } from "node:test";
import * as mariadb from "mariadb";
import { mysqlConnectionOptions } from "~/lib/mysqlUrl";
import { closeConnections, db } from "./helpers";
import { createStaffAccount, signedIn } from "./staffHttp";

after(closeConnections);

async function asAppUser<T>(run: (conn: mariadb.Connection) => Promise<T>): Promise<T> {
  const conn = await mariadb.createConnection(mysqlConnectionOptions(process.env.TEST_APP_DATABASE_URL!));
  try {
    return await run(conn);
  } finally {
    await conn.end();
  }
}

describe("audit log", () => {
  test("concurrent mode switches are serialised: each entry's `from` is the previous entry's `to`", async () => {
    const engineer = await signedIn(await createStaffAccount("engineer"));
    const before = await db.auditEvent.aggregate({ _max: { id: true } });
    const switches = Array.from({ length: 12 }, (_, i) =>
      engineer.mutate("rollout.setMode", { mode: i % 2 ? "optional" : "required", reason: `switch ${i}` }),
    );
    // A switch to the mode already in force is refused (409), so some of the twelve are.
    const statuses = (await Promise.all(switches)).map((r) => r.status);
    assert.ok(
      statuses.every((s) => s === 200 || s === 409),
      String(statuses),
    );
    const entries = await db.auditEvent.findMany({
      where: { action: "mode.changed", id: { gt: before._max.id ?? 0n } },
      orderBy: { id: "asc" },
    });
    const chain = entries.map((e) => JSON.parse(e.details!) as { from: string; to: string });
    assert.equal(chain.length, statuses.filter((s) => s === 200).length);
    for (let i = 0; i < chain.length; i++) assert.notEqual(chain[i]!.from, chain[i]!.to, `entry ${i} changed nothing`);
    for (let i = 1; i < chain.length; i++)
      assert.equal(chain[i]!.from, chain[i - 1]!.to, `entry ${i}: ${JSON.stringify(chain)}`);
    if (chain.at(-1)?.to === "required")
      await engineer.mutate("rollout.setMode", { mode: "optional", reason: "clean-up" });
  });

  test("engineers read it filtered and paged; support may not", async () => {
    const account = await createStaffAccount("engineer");
    const engineer = await signedIn(account);
    const created = await engineer.mutate("staff.create", {
      email: `audited-${account.id}@example.com`,
      name: "Audited",
      role: "support",
    });
    assert.equal(created.status, 200);
    const filtered = await engineer.query("audit.list", { action: "staff.created", actor: account.email, limit: 50 });
    assert.equal(filtered.data.items.length, 1);
    const entry = filtered.data.items[0];
    assert.equal(entry.targetId, String(created.data.userId));
    assert.equal(entry.ipAddress, engineer.address);
    assert.equal(entry.userAgent, engineer.userAgent);
    assert.deepEqual(entry.details, { email: `audited-${account.id}@example.com`, role: "support" });

    const first = await engineer.query("audit.list", { limit: 2 });
    assert.equal(first.data.items.length, 2);
    const second = await engineer.query("audit.list", { limit: 2, cursor: first.data.nextCursor });
    assert.ok(BigInt(second.data.items[0].id) < BigInt(first.data.items[1].id), "the next page is older");

    const support = await signedIn(await createStaffAccount("support"));
    assert.equal((await support.query("audit.list", { limit: 5 })).status, 403);
  });
});

describe("closing a ledger mismatch", () => {
  test("is audited with its note, and who closed it is written once", async () => {
    const mismatch = await db.ledgerMismatch.create({
      data: {
        fingerprint: `closing-test:${randomUUID()}`,
        kind: "gateway_charge_without_app_charge",
        evidence: "{}",
        firstRunId: 0,
        detectedAt: new Date(),
        lastSeenAt: new Date(),
      },
    });
    const account = await createStaffAccount("engineer");
    const engineer = await signedIn(account);
    const id = String(mismatch.id);
    const note = "refunded at the provider, ticket 7";
    assert.equal((await engineer.mutate("ledger.resolve", { id, note })).status, 200);
    const entry = await db.auditEvent.findFirstOrThrow({
      where: { action: "ledger_mismatch.resolved", targetId: id },
    });
    assert.equal(entry.actorStaffId, account.id);
    assert.deepEqual(JSON.parse(entry.details!), { note });
    assert.equal((await engineer.mutate("ledger.resolve", { id, note: "again" })).status, 404);

    // Not even the app's own database user (nor the admin) can rewrite it afterwards.
    const rewrite = { errno: 1644 }; // ER_SIGNAL_EXCEPTION, from the table's trigger
    await asAppUser(async (conn) => {
      await assert.rejects(conn.query("UPDATE ledger_mismatches SET resolved_by = 1 WHERE id = ?", [id]), rewrite);
      await assert.rejects(
        conn.query("UPDATE ledger_mismatches SET resolution_note = 'x' WHERE id = ?", [id]),
        rewrite,
      );
      await assert.rejects(conn.query("UPDATE ledger_mismatches SET resolved_at = NULL WHERE id = ?", [id]), rewrite);
      await conn.query("UPDATE ledger_mismatches SET last_seen_at = NOW(6) WHERE id = ?", [id]);
    });
    await assert.rejects(db.$executeRaw`UPDATE ledger_mismatches SET resolved_by = NULL WHERE id = ${mismatch.id}`);
    const stored = await db.ledgerMismatch.findUniqueOrThrow({ where: { id: mismatch.id } });
    assert.equal(stored.resolvedBy, account.id);
    assert.equal(stored.resolutionNote, note);
  });
});

describe("least privilege", () => {
  test("the app's database user can add and read audit entries but not change or delete them", async () => {
    await asAppUser(async (conn) => {
      const [who] = await conn.query("SELECT CURRENT_USER() AS u");
      assert.ok(!String(who.u).startsWith("root@"), `connected as ${who.u}`);
      await conn.query(
        "INSERT INTO audit_events (action, actor_type, actor_label) VALUES ('logout', 'cli', 'privilege-test')",
      );
      const [row] = await conn.query("SELECT id FROM audit_events WHERE actor_label = 'privilege-test'");
      const denied = { errno: 1142 }; // ER_TABLEACCESS_DENIED_ERROR
      await assert.rejects(conn.query("UPDATE audit_events SET action = 'x' WHERE id = ?", [row.id]), denied);
      await assert.rejects(conn.query("DELETE FROM audit_events WHERE id = ?", [row.id]), denied);
      await assert.rejects(conn.query("DROP TABLE staff_sessions"), denied);
      await assert.rejects(conn.query("ALTER TABLE charges ADD COLUMN x INT"), denied);
      await assert.rejects(conn.query("SELECT * FROM _prisma_migrations"), denied);
      // Everything else: what the app does all day.
      await conn.query("UPDATE settings SET value = value WHERE name = 'idempotency_mode'");
      await conn.query("DELETE FROM rate_limits WHERE `key` = 'nothing'");
    });
  });

  test("its grants are exactly the declared list (scripts/lib/appUser.ts), which names every table", async () => {
    const user = new URL(process.env.TEST_APP_DATABASE_URL!).username;
    const database = new URL(process.env.DATABASE_URL!).pathname.slice(1);
    const tables = await db.$queryRaw<{ name: string }[]>`
      SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = ${database}`;
    assert.deepEqual(
      tables.map((t) => t.name).filter((t) => t !== "_prisma_migrations" && !(t in APP_GRANTS)),
      [],
      "every table is declared: a new one needs a decision in APP_GRANTS",
    );
    const declared = Object.entries(APP_GRANTS)
      .flatMap(([table, privileges]) => privileges.map((p) => `${table} ${p}`))
      .sort();
    for (const host of ["127.0.0.1", "localhost"]) {
      const grantee = `'${user}'@'${host}'`;
      // Column privileges as APP_GRANTS writes them: `UPDATE (a, b)`, columns in alphabetical order.
      const granted = await db.$queryRaw<{ t: string; p: string }[]>`
        SELECT TABLE_NAME AS t, PRIVILEGE_TYPE AS p FROM information_schema.TABLE_PRIVILEGES
         WHERE GRANTEE = ${grantee} AND TABLE_SCHEMA = ${database}
        UNION ALL
        SELECT TABLE_NAME,
               CONCAT(PRIVILEGE_TYPE, ' (', GROUP_CONCAT(COLUMN_NAME ORDER BY COLUMN_NAME SEPARATOR ', '), ')')
          FROM information_schema.COLUMN_PRIVILEGES
         WHERE GRANTEE = ${grantee} AND TABLE_SCHEMA = ${database}
         GROUP BY TABLE_NAME, PRIVILEGE_TYPE`;
      assert.deepEqual(granted.map((g) => `${g.t} ${g.p}`).sort(), declared, grantee);
      const wider = await db.$queryRaw<{ p: string }[]>`
        SELECT PRIVILEGE_TYPE AS p FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ${grantee}
        UNION ALL
        SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES
         WHERE GRANTEE = ${grantee} AND PRIVILEGE_TYPE <> 'USAGE'`;
      assert.deepEqual(wider, [], `${grantee}: no database-wide or global privileges`);
    }
    await asAppUser(async (conn) => {
      const denied = { errno: 1142 }; // ER_TABLEACCESS_DENIED_ERROR
      // Refunds move what was refunded and held; nothing else of a charge ever changes.
      await conn.query("UPDATE charges SET refund_held_cents = refund_held_cents WHERE id = 'none'");
      const columnDenied = { errno: 1143 }; // ER_COLUMNACCESS_DENIED_ERROR
      await assert.rejects(conn.query("UPDATE charges SET amount_cents = 1 WHERE id = 'none'"), columnDenied);
      await assert.rejects(conn.query("UPDATE refunds SET amount_cents = 1 WHERE id = 'none'"), denied);
      await assert.rejects(conn.query("DELETE FROM charges WHERE id = 'none'"), denied);
      await assert.rejects(conn.query("DELETE FROM staff_users WHERE id = 0"), denied);
      await assert.rejects(conn.query("DELETE FROM api_keys WHERE id = 0"), denied);
      await assert.rejects(conn.query("DELETE FROM ledger_mismatches WHERE id = 0"), denied);
    });
  });

  test("the running app connects as that user, not as root", async () => {
    const appUser = new URL(process.env.TEST_APP_DATABASE_URL!).username;
    const database = new URL(process.env.DATABASE_URL!).pathname.slice(1);
    await fetch(`${process.env.TEST_APP_URL}/api/health`);
    const users = await db.$queryRaw<{ user: string }[]>`
      SELECT DISTINCT USER AS user FROM information_schema.PROCESSLIST
       WHERE DB = ${database} AND ID <> CONNECTION_ID()`;
    const names = users.map((u) => u.user);
    assert.ok(names.includes(appUser), `connections: ${names.join(", ")}`);
  });

  test("demo staff are never seeded with NODE_ENV=production", () => {
    const before = spawnSync(
      "node_modules/.bin/tsx",
      [...SERVER_CODE_FLAGS, "-e", "import('./scripts/lib/seed.ts').then((m) => m.seedDemo())"],
      {
        env: { ...process.env, NODE_ENV: "production" },
        encoding: "utf8",
      },
    );
    assert.notEqual(before.status, 0);
    assert.match(before.stderr, /refusing to seed demo data with NODE_ENV=production/);
  });
});
