/**
 * `npm run staff -- <command>`: dashboard staff from the command line, e.g. the
 * first engineer of a new installation. Audited with the actor `cli:<os user>@<host>`,
 * or `cli:<name>` with `--actor <name>`.
 */
import { positiveInt, required, runCli, UsageError } from "./lib/cli";

const USAGE = `usage: npm run staff -- <command>
  list
  create --email <e-mail> --name <name> --role support|engineer   prints a first password (or pass --password-stdin)
  disable <user id>                                               ends their sessions
  enable <user id>
  reset-2fa <user id>                                             for a lost authenticator
every command: --actor <name>   who is acting, for the audit log (default: the OS user @ this host)`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

const options = {
  email: { type: "string" },
  name: { type: "string" },
  role: { type: "string" },
  "password-stdin": { type: "boolean" },
} as const;

await runCli(USAGE, options, {
  async list() {
    const { listStaff } = await import("~/server/staff/manage");
    for (const u of await listStaff()) {
      const status = u.disabledAt ? "disabled" : "active";
      console.log(`#${u.id} ${u.email} ${u.name} ${u.role} 2fa:${u.twoFactor ? "on" : "off"} ${status}`);
    }
  },
  async create(values, _positionals, audit) {
    const { createStaff } = await import("~/server/staff/manage");
    const { MIN_PASSWORD_LENGTH } = await import("~/server/auth/password");
    const role = required(values, "role");
    if (role !== "support" && role !== "engineer") throw new UsageError("--role must be support or engineer");
    const password = values["password-stdin"] ? await readStdin() : undefined;
    if (password !== undefined && password.length < MIN_PASSWORD_LENGTH) {
      throw new UsageError(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
    }
    const input = { email: required(values, "email"), name: required(values, "name"), role, password } as const;
    const { user, password: first } = await createStaff(input, audit);
    console.log(
      `staff #${user.id} ${user.email} (${user.role})${password ? "" : `\nfirst password (shown once): ${first}`}` +
        "\nthe password must be changed at the first sign-in",
    );
  },
  async disable(_values, [id], audit) {
    const { setDisabled } = await import("~/server/staff/manage");
    const { ended } = await setDisabled(positiveInt(id, "the user id"), true, audit);
    console.log(`disabled; ${ended} session(s) ended`);
  },
  async enable(_values, [id], audit) {
    const { setDisabled } = await import("~/server/staff/manage");
    await setDisabled(positiveInt(id, "the user id"), false, audit);
    console.log("enabled");
  },
  async "reset-2fa"(_values, [id], audit) {
    const { resetTwoFactor } = await import("~/server/staff/manage");
    const { ended } = await resetTwoFactor(positiveInt(id, "the user id"), audit);
    console.log(`two-factor reset; ${ended} session(s) ended`);
  },
});
