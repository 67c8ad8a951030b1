/**
 * `npm run docs:errors`: rewrites docs/errors.md's table of error codes from the error registry
 * (packages/client/src/errorRegistry.ts), between its two marker comments. Run it after changing the registry.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { withErrorTable } from "./lib/errorTable";

const file = path.resolve(import.meta.dirname, "../docs/errors.md");
const before = readFileSync(file, "utf8");
const after = withErrorTable(before);
if (after === before) console.log("docs/errors.md: the error table is up to date");
else {
  writeFileSync(file, after);
  console.log("docs/errors.md: error table rewritten from the registry");
}
