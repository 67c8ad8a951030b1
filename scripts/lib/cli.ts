import { hostname, userInfo } from "node:os";
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { AuditContext } from "../../src/server/audit/audit";
import { pointAtStart } from "./config";

/**
 * Who runs the command, for the audit log: `--actor <name>` when given (a
 * person's name or e-mail, e.g. in automation), else the OS user at this host.
 * With neither (no passwd entry, as in some containers) the command refuses
 * to run rather than record an anonymous change.
 */
export function cliActorName(actor: string | boolean | undefined): string {
  if (typeof actor === "string" && actor.trim() !== "") return `cli:${actor.trim()}`.slice(0, 255);
  let user = "";
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry for this uid
  }
  if (!user) throw new UsageError("--actor <your name> is required: the OS user is unknown");
  return `cli:${user}@${hostname()}`.slice(0, 255);
}

/**
 * Shared by `npm run clients` and `npm run staff`: parses `<command> --flags`
 * (every command takes `--actor`), runs the command against the database
 * `npm start` uses (DATABASE_ADMIN_URL, else DATABASE_URL; config.ts) with the
 * audit context of whoever runs it, and prints a domain refusal as a one-line
 * error (exit 1).
 */
export async function runCli(
  usage: string,
  options: NonNullable<ParseArgsConfig["options"]>,
  commands: Record<
    string,
    (values: Record<string, string | boolean | undefined>, positionals: string[], audit: AuditContext) => Promise<void>
  >,
) {
  pointAtStart();
  const { values, positionals } = parseArgs({
    options: { ...options, actor: { type: "string" }, help: { type: "boolean" } },
    allowPositionals: true,
  });
  const [name, ...rest] = positionals;
  const command = name ? commands[name] : undefined;
  if (!command || values.help) {
    console.log(usage);
    process.exit(command || values.help ? 0 : 1);
  }
  const { disconnectDatabase } = await import("~/server/db");
  const { DomainError } = await import("~/server/domainError");
  const { cliContext } = await import("~/server/audit/audit");
  try {
    const audit = cliContext(cliActorName(values.actor));
    await command(values as Record<string, string | boolean | undefined>, rest, audit);
  } catch (error) {
    if (!(error instanceof DomainError || error instanceof UsageError)) throw error;
    console.error(`error: ${error.message}`);
    process.exitCode = 1;
  } finally {
    await disconnectDatabase();
  }
}

export class UsageError extends Error {}

export function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value.trim();
}

export function positiveInt(value: string | undefined, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${what} must be a positive whole number`);
  return n;
}
