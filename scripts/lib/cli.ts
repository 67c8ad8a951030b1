import { parseArgs, type ParseArgsConfig } from "node:util";
import { pointAtStartDatabase } from "./config";

/**
 * Shared by `npm run clients` and `npm run staff`: parses `<command> --flags`,
 * runs the command against the database `npm start` uses (DATABASE_ADMIN_URL,
 * else DATABASE_URL; config.ts) and prints a domain refusal as a one-line error (exit 1).
 */
export async function runCli(
  usage: string,
  options: NonNullable<ParseArgsConfig["options"]>,
  commands: Record<
    string,
    (values: Record<string, string | boolean | undefined>, positionals: string[]) => Promise<void>
  >,
) {
  pointAtStartDatabase();
  const { values, positionals } = parseArgs({
    options: { ...options, help: { type: "boolean" } },
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
  try {
    await command(values as Record<string, string | boolean | undefined>, rest);
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
