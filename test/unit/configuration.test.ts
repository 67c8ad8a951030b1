/**
 * Configuration in one place: .env.example lists every variable src/env.ts parses and every one the scripts read,
 * each with its meaning and the default the code really has; docs/configuration.md's tables are generated from it
 * (`npm run docs:config`).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { envVariables } from "~/env";
import {
  type ConfigEntry,
  configPagePath,
  configTable,
  currentBlock,
  readEnvExample,
  withConfigTable,
} from "../../scripts/lib/configTable";

const root = path.resolve(import.meta.dirname, "../..");

/** What the scripts read from the environment, by name, with the literal default written beside the read, if any. */
function scriptVariables(): Map<string, string | undefined> {
  const files = (dir: string): string[] =>
    readdirSync(path.join(root, dir)).flatMap((name) => {
      const rel = `${dir}/${name}`;
      return statSync(path.join(root, rel)).isDirectory() ? files(rel) : rel.endsWith(".ts") ? [rel] : [];
    });
  const found = new Map<string, string | undefined>();
  for (const file of [...files("scripts"), "playwright.config.ts"]) {
    const source = readFileSync(path.join(root, file), "utf8");
    // process.env.NAME, optionally `?? literal`; portFrom("NAME", literal) (scripts/lib/config.ts).
    const reads = /process\.env\.([A-Z][A-Z0-9_]*)(?:\s*\?\?\s*("[^"]*"|\d+))?|portFrom\("([A-Z0-9_]+)", (\d+)\)/g;
    for (const [, name, literal, portName, port] of source.matchAll(reads)) {
      const fallback = (literal ?? port)?.replace(/^"|"$/g, "");
      found.set((name ?? portName)!, fallback ?? found.get((name ?? portName)!));
    }
  }
  // The operating system's, and what the test runner sets for the processes it starts.
  for (const internal of ["PATH", "USER", "TEST_APP_URL", "TEST_BUNDLES"]) found.delete(internal);
  return found;
}

type Field = { parse: (value: unknown) => unknown };
const fields = envVariables as unknown as Record<string, Field>;

/** Everything wrong with these entries, in words: [] when .env.example and the code agree. */
function problems(entries: ConfigEntry[]): string[] {
  const found: string[] = [];
  const byName = new Map(entries.map((e) => [e.name, e]));
  const scripts = scriptVariables();
  for (const name of new Set([...Object.keys(fields), ...scripts.keys()])) {
    if (!byName.has(name)) found.push(`${name} is read but not in .env.example`);
  }
  for (const entry of entries) {
    const { name, value } = entry;
    if (entries.filter((e) => e.name === name).length > 1) found.push(`${name} is listed twice`);
    if (!entry.meaning) found.push(`${name} has no comment saying what it means`);
    const field = fields[name];
    if (field) {
      const defaultValue = field.parse(undefined);
      if (value === "" && defaultValue !== undefined)
        found.push(`${name}: the default is ${JSON.stringify(defaultValue)}, .env.example says unset`);
      if (value !== "") {
        let parsed: unknown;
        try {
          parsed = field.parse(value);
        } catch {
          found.push(`${name}=${value} is refused by src/env.ts`);
          continue;
        }
        if (defaultValue === undefined) found.push(`${name}: unset by default, .env.example says ${value}`);
        else if (JSON.stringify(parsed) !== JSON.stringify(defaultValue))
          found.push(`${name}: the default is ${JSON.stringify(defaultValue)}, .env.example says ${value}`);
      }
    } else if (scripts.has(name)) {
      const fallback = scripts.get(name);
      if (fallback !== undefined && fallback !== value)
        found.push(`${name}: the scripts' default is ${fallback}, .env.example says ${value || "unset"}`);
    } else found.push(`${name} is in .env.example but nothing reads it`);
  }
  return found;
}

describe(".env.example", () => {
  const entries = readEnvExample();

  test("lists every variable src/env.ts and the scripts read, with its meaning and the code's default", () => {
    assert.deepEqual(problems(entries), []);
  });

  test("a missing variable, a wrong default, an unknown name or a missing meaning is caught", () => {
    const edited = (name: string, change: Partial<ConfigEntry>) =>
      entries.map((e) => (e.name === name ? { ...e, ...change } : e));
    assert.deepEqual(problems(entries.filter((e) => e.name !== "LEASE_MARGIN_MS")), [
      "LEASE_MARGIN_MS is read but not in .env.example",
    ]);
    assert.deepEqual(problems(entries.filter((e) => e.name !== "GATEWAY_PORT")), [
      "GATEWAY_PORT is read but not in .env.example",
    ]);
    assert.deepEqual(problems(edited("REAP_AFTER_MS", { value: "300000" })), [
      "REAP_AFTER_MS: the default is 60000, .env.example says 300000",
    ]);
    assert.deepEqual(problems(edited("HEAL_LATE_CHARGES", { value: "false" })), [
      "HEAL_LATE_CHARGES: the default is true, .env.example says false",
    ]);
    assert.deepEqual(problems(edited("PORT", { value: "3001" })), [
      "PORT: the scripts' default is 3000, .env.example says 3001",
    ]);
    assert.deepEqual(problems(edited("METRICS_TOKEN", { value: "short" })), [
      "METRICS_TOKEN=short is refused by src/env.ts",
    ]);
    assert.deepEqual(problems(edited("LOG_LEVEL", { meaning: "" })), ["LOG_LEVEL has no comment saying what it means"]);
    assert.deepEqual(problems([...entries, { ...entries[0]!, name: "REAP_AFTER" }]), [
      "REAP_AFTER is in .env.example but nothing reads it",
    ]);
  });
});

describe("docs/configuration.md", () => {
  const page = readFileSync(configPagePath, "utf8");

  test("has the tables .env.example generates (run `npm run docs:config` after changing it)", () => {
    assert.equal(currentBlock(page), configTable(), "docs/configuration.md differs: run `npm run docs:config`");
  });

  test("a changed default shows: the block is rewritten", () => {
    const entries = readEnvExample().map((e) => (e.name === "PORT" ? { ...e, value: "3001" } : e));
    assert.match(withConfigTable(page, entries), /\| `PORT` \| `3001` \|/);
    assert.equal(withConfigTable(page), page);
  });
});
