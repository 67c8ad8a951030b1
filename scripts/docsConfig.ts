/**
 * `npm run docs:config`: rewrites docs/configuration.md's tables from .env.example (the one list of variables,
 * their defaults and meanings), between its two marker comments. Run it after changing .env.example.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { configPagePath, withConfigTable } from "./lib/configTable";

const before = readFileSync(configPagePath, "utf8");
const after = withConfigTable(before);
if (after === before) console.log("docs/configuration.md: the tables are up to date");
else {
  writeFileSync(configPagePath, after);
  console.log("docs/configuration.md: tables rewritten from .env.example");
}
