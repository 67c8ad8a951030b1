import pino from "pino";
import { env } from "~/env";
import { currentLogContext } from "./context";

/**
 * A stack frame as it is logged: the function's name, never where its file is. A path says how the machine is laid
 * out (user, directories, versions), which a log shipped elsewhere must not; the names tell an engineer where to look.
 */
export function withoutLocation(frame: string): string {
  const at = frame.trim();
  const named = /^at (?:async )?(.+?) \(.*\)$/.exec(at);
  if (named) return `at ${named[1]}`;
  return /^at (?:async )?\S*[/\\:]/.test(at) ? "at <anonymous>" : at;
}

/**
 * An error as it is logged: its type, codes and first line, and where it was
 * thrown. The driver's messages go on to quote the SQL and its parameters,
 * Prisma's the calling code; neither belongs in a log.
 */
function serializeError(error: unknown) {
  if (!(error instanceof Error)) return { message: String(error).split("\n")[0] };
  const e = error as Error & { code?: unknown; errno?: unknown; sqlState?: unknown };
  return {
    type: e.name,
    message: e.message.trim().split("\n")[0],
    code: e.code,
    errno: e.errno,
    sqlState: e.sqlState,
    stack: e.stack
      ?.split("\n")
      .filter((line) => line.trimStart().startsWith("at "))
      .slice(0, 8)
      .map(withoutLocation)
      .join("\n"),
  };
}

/**
 * The server's structured log: one JSON object per line on stdout, with the
 * current request's client, key and record (context.ts) on every line.
 * Secrets never reach it: nothing logs headers or bodies, errors are cut to
 * their first line (serializeError), and the paths below are censored in case
 * an object carrying one is ever logged.
 */
export const log = pino({
  level: env.LOG_LEVEL,
  base: { service: "charges", pid: process.pid },
  timestamp: pino.stdTimeFunctions.isoTime,
  mixin: () => currentLogContext() ?? {},
  serializers: { err: serializeError, error: serializeError },
  redact: {
    paths: [
      "authorization",
      "*.authorization",
      "apiKey",
      "*.apiKey",
      "card_token",
      "*.card_token",
      "cardToken",
      "*.cardToken",
      "password",
      "*.password",
      "secret",
      "*.secret",
      "token",
      "*.token",
    ],
    censor: "[redacted]",
  },
});
