/**
 * `npm run clients -- <command>`: API clients and keys from the command line, for
 * first setup and automation. The same operations as the dashboard, audited
 * with the actor `cli:<os user>@<host>` (or `--actor <name>`). A key is printed once; it is stored hashed.
 */
import { positiveInt, required, runCli } from "./lib/cli";

const USAGE = `usage: npm run clients -- <command>
  list
  create --name <name> [--email <contact e-mail>]    a new client and its first key
  issue-key <client id>                              another key; the others keep working
  rotate <client id> [--grace-hours 24]              a new key; the others stop after the grace period
  revoke-key <key id>                                stops a key at once
every command: --actor <name>   who is acting, for the audit log (default: the OS user @ this host)`;

await runCli(
  USAGE,
  { name: { type: "string" }, email: { type: "string" }, "grace-hours": { type: "string" } },
  {
    async list() {
      const { listApiClients } = await import("~/server/apiClients/manage");
      for (const c of await listApiClients()) {
        console.log(`#${c.id} ${c.name} ${c.contactEmail ?? ""}`);
        for (const k of c.keys)
          console.log(
            `   key ${k.id} ${k.keyPrefix}… ${k.state}${k.expiresAt ? ` until ${k.expiresAt.toISOString()}` : ""}`,
          );
      }
    },
    async create(values, _positionals, audit) {
      const { createClient } = await import("~/server/apiClients/manage");
      const email = typeof values.email === "string" ? values.email.trim() : null;
      const { client, apiKey, keyId } = await createClient(
        { name: required(values, "name"), contactEmail: email },
        audit,
      );
      console.log(`client #${client.id} ${client.name}\nkey ${keyId} (shown once): ${apiKey}`);
    },
    async "issue-key"(_values, [id], audit) {
      const { issueKey } = await import("~/server/apiClients/manage");
      const { apiKey, keyId } = await issueKey(positiveInt(id, "the client id"), audit);
      console.log(`key ${keyId} (shown once): ${apiKey}`);
    },
    async rotate(values, [id], audit) {
      const { rotateKey } = await import("~/server/apiClients/manage");
      const hours = values["grace-hours"] === undefined ? 24 : Number(values["grace-hours"]);
      if (!Number.isFinite(hours) || hours < 0) throw new Error("--grace-hours must be 0 or more");
      const { apiKey, keyId, graceEndsAt } = await rotateKey(
        positiveInt(id, "the client id"),
        hours * 3_600_000,
        audit,
      );
      console.log(
        `key ${keyId} (shown once): ${apiKey}\nthe client's other keys stop working at ${graceEndsAt.toISOString()}`,
      );
    },
    async "revoke-key"(_values, [id], audit) {
      const { revokeKey } = await import("~/server/apiClients/manage");
      await revokeKey(positiveInt(id, "the key id"), audit);
      console.log(`key ${id} revoked`);
    },
  },
);
