/**
 * Where the rules live, checked: the idempotency module's files import each
 * other without a cycle, only its persistence module writes idempotency records
 * and only its lifecycle says which columns make a phase, and the SDK package (packages/client) imports
 * nothing from outside itself. And no source line is over
 * 120 characters: Biome's formatter keeps code within that width but cannot
 * break a string, a comment or a test name, so this is the guard for those.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

const root = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");
const filesUnder = (dir: string): string[] =>
  readdirSync(path.join(root, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    return statSync(path.join(root, rel)).isDirectory() ? filesUnder(rel) : /\.tsx?$/.test(name) ? [rel] : [];
  });
const importsOf = (source: string) =>
  [...source.matchAll(/^(?:import|export)[^;]*?from\s+"([^"]+)"/gms)].map((m) => m[1]!);

test("the idempotency module's files import each other without a cycle", () => {
  const dir = "src/server/idempotency";
  const graph = new Map<string, string[]>();
  for (const file of filesUnder(dir)) {
    const local = importsOf(read(file))
      .filter((spec) => spec.startsWith("./"))
      .map((spec) => `${dir}/${spec.slice(2)}.ts`);
    graph.set(file, local);
  }
  const visiting = new Set<string>();
  const done = new Set<string>();
  const visit = (file: string, trail: string[]) => {
    if (done.has(file)) return;
    assert.ok(!visiting.has(file), `import cycle: ${[...trail, file].join(" -> ")}`);
    visiting.add(file);
    for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
    visiting.delete(file);
    done.add(file);
  };
  for (const file of graph.keys()) visit(file, []);
});

test("only records.ts writes records; SQL elsewhere selects a phase through the lifecycle's condition", () => {
  const writes = /(UPDATE|INSERT INTO|DELETE FROM)\s+idempotent_requests/i;
  const writers = ["src/server", "src/app", "src/worker"].flatMap(filesUnder).filter((f) => writes.test(read(f)));
  assert.deepEqual(writers, ["src/server/idempotency/records.ts"], "the transitions live in records.ts");
  const elsewhere = ["src/server", "src/app", "src/worker"]
    .flatMap(filesUnder)
    .filter((f) => !f.startsWith("src/server/idempotency/"));
  for (const file of elsewhere) {
    const source = read(file);
    if (/(FROM|JOIN)\s+idempotent_requests/i.test(source)) {
      const phaseColumns = /\b(lease_expires_at|finished_by)\b|\bstate\s*(=|IN\b|IS\b)/i;
      assert.doesNotMatch(source, phaseColumns, `${file} spells out a phase (use lifecycle.phaseCondition)`);
    }
    const prismaFilters = /idempotentRequest\.\w+\(\{[^)]*?\b(state|finishedBy|leaseExpiresAt)\b/s;
    assert.doesNotMatch(source, prismaFilters, `${file} filters records by their state columns`);
  }
});

test("the SDK package imports only its own files, and only its file store and webhook check are Node-only", () => {
  for (const file of filesUnder("packages/client/src")) {
    for (const spec of importsOf(read(file))) {
      if (/\/(fileOperationStore|webhooks)\.ts$/.test(file) && spec.startsWith("node:")) continue;
      assert.match(
        spec,
        /^\.\/[A-Za-z]+\.js$/,
        `${file} imports ${spec}: the package ships alone (its own files only)`,
      );
    }
  }
});

test("nothing outside src/server/gateway knows which provider charges go to", () => {
  const outside = ["src/server", "src/app", "src/worker"]
    .flatMap(filesUnder)
    .filter((f) => !f.startsWith("src/server/gateway/"));
  for (const file of outside) {
    const source = read(file);
    for (const spec of importsOf(source)) {
      assert.doesNotMatch(spec, /gateway\/(stripeGateway|httpGateway)$|^stripe$/, `${file} imports ${spec}`);
    }
    assert.doesNotMatch(source, /env\.(GATEWAY|GATEWAY_URL|STRIPE_\w+)\b/, `${file} reads the gateway's configuration`);
  }
});

const MAX_LINE = 120;
const SOURCE = ["*.ts", "*.tsx", "*.mts", "*.cts", "*.js", "*.mjs", "*.cjs", "*.css"];

test(`no source line is over ${MAX_LINE} characters`, () => {
  // Tracked files and new ones not yet added, minus what .gitignore excludes (generated code, builds).
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ...SOURCE], {
    cwd: root,
    encoding: "utf8",
  })
    .split("\0")
    .filter(Boolean);
  assert.ok(files.includes("src/server/idempotency/lifecycle.ts"), "git lists the source files");
  const long: string[] = [];
  for (const file of new Set(files)) {
    let text: string;
    try {
      text = read(file);
    } catch {
      continue; // deleted in the work tree, not yet in the index
    }
    text.split("\n").forEach((line, i) => {
      const length = [...line].length;
      if (length > MAX_LINE) long.push(`${file}:${i + 1} (${length} characters)`);
    });
  }
  assert.deepEqual(long, [], `lines over ${MAX_LINE} characters; wrap them by hand:\n${long.join("\n")}`);
});

test("the folders of src/server import each other without a cycle, and src/ imports no server code upward", () => {
  /** The module a file belongs to: a folder of src/server (or a file at its root), else its top folder of src/. */
  const moduleOf = (file: string) => {
    const [top, second] = file.replace(/^src\//, "").split("/");
    return top === "server" ? `server/${second!.replace(/\.tsx?$/, "")}` : top!;
  };
  const graph = new Map<string, Set<string>>();
  for (const file of filesUnder("src")) {
    const from = moduleOf(file);
    for (const spec of importsOf(read(file)).filter((s) => s.startsWith("~/"))) {
      const to = moduleOf(`src/${spec.slice(2)}`);
      if (to !== from && to !== "generated") graph.set(from, (graph.get(from) ?? new Set()).add(to));
    }
  }
  const done = new Set<string>();
  const visit = (node: string, trail: string[]) => {
    assert.ok(!trail.includes(node), `import cycle between folders: ${[...trail, node].join(" -> ")}`);
    if (done.has(node)) return;
    for (const next of graph.get(node) ?? []) visit(next, [...trail, node]);
    done.add(node);
  };
  for (const node of graph.keys()) visit(node, []);
  for (const low of ["lib", "env.ts"]) {
    const upward = [...(graph.get(low) ?? [])].filter((to) => to.startsWith("server/"));
    assert.deepEqual(upward, [], `${low} imports server code`);
  }
});

/** The file a `~/` or relative import names (an index.ts for a folder), or undefined outside src/. */
function resolveImport(from: string, spec: string): string | undefined {
  const base = spec.startsWith("~/")
    ? `src/${spec.slice(2)}`
    : spec.startsWith(".")
      ? path.posix.normalize(path.posix.join(path.posix.dirname(from), spec))
      : undefined;
  if (!base) return undefined;
  for (const candidate of [`${base}.ts`, `${base}.tsx`, `${base}/index.ts`]) {
    try {
      if (statSync(path.join(root, candidate)).isFile()) return candidate;
    } catch {}
  }
  return undefined;
}

test("the files of src/server import each other without a cycle (not only its folders)", () => {
  const files = filesUnder("src/server");
  const graph = new Map(
    files.map((file) => [
      file,
      importsOf(read(file))
        .map((spec) => resolveImport(file, spec))
        .filter((to): to is string => !!to?.startsWith("src/server/") && to !== file),
    ]),
  );
  const done = new Set<string>();
  const visit = (file: string, trail: string[]) => {
    assert.ok(!trail.includes(file), `import cycle: ${[...trail.slice(trail.indexOf(file)), file].join(" -> ")}`);
    if (done.has(file)) return;
    for (const next of graph.get(file) ?? []) visit(next, [...trail, file]);
    done.add(file);
  };
  for (const file of files) visit(file, []);
});

const importsFrom = (dir: string, target: RegExp) =>
  filesUnder(dir).flatMap((file) =>
    importsOf(read(file))
      .filter((spec) => target.test(spec))
      .map((spec) => `${file} imports ${spec}`),
  );

test("benchmark code stays in src/server/benchmark: the money path reads no benchmark switch", () => {
  const moneyPath = ["operations", "idempotency", "charges", "refunds", "gateway", "sweep", "ledger"].map(
    (d) => `src/server/${d}`,
  );
  const reading = [...moneyPath, "src/app/api/charges", "src/app/api/refunds"]
    .flatMap(filesUnder)
    .filter((file) => /\bBENCHMARK_\w+/.test(read(file)));
  assert.deepEqual(reading, [], "a BENCHMARK_ switch read on the money path");
  const importing = moneyPath.flatMap((dir) => importsFrom(dir, /server\/benchmark\//));
  assert.deepEqual(importing, [], "the money path imports benchmark code");
  assert.doesNotMatch(read("src/server/operations/moneyOperation.ts"), /withoutIdempotency|benchmark/i);
});

test("every finished operation's writes have one path; the ledger and the rollout keep out of the protocol", () => {
  // The keyless count is added in operations/completion.ts (and the refused one in operations/keyless.ts) only.
  const counting = ["src/server", "src/app", "src/worker"]
    .flatMap(filesUnder)
    .filter((file) => /\bkeylessCountStatement\(/.test(read(file)));
  assert.deepEqual(counting.sort(), [
    "src/server/operations/completion.ts",
    "src/server/operations/keyless.ts",
    "src/server/rollout/counters.ts",
  ]);
  const ledger = importsFrom("src/server/ledger", /server\/operations\//);
  assert.deepEqual(ledger, [], "the ledger completes through moneyRoutes");
  assert.deepEqual(importsFrom("src/server/rollout", /server\/idempotency/), [], "the rollout knows no protocol");
});

test("narrow doors: the read side of records writes nothing; the key's header parser is HTTP's", () => {
  const reading = read("src/server/idempotency/reading.ts");
  assert.doesNotMatch(reading, /\b(prune\w*|flush\w*|correct\w*|expire|complete|take|release)\b[^\n]*from/i);
  for (const spec of importsOf(reading)) assert.doesNotMatch(spec, /records$|events$/, `reading.ts re-exports ${spec}`);
  assert.ok(filesUnder("src/server/http").includes("src/server/http/idempotencyKeyHeader.ts"));
  assert.doesNotMatch(read("src/server/idempotency/events.ts"), /export async function (eventsOf|eventCounts)/);
});

test("one list of money routes: the API reference and the ledger's invariants name none by hand", () => {
  for (const file of ["src/server/openapi.ts", "src/server/ledger/invariants.ts"]) {
    const source = read(file);
    for (const spec of importsOf(source)) {
      assert.doesNotMatch(spec, /(chargeOperation|refundOperation)$/, `${file} imports ${spec}: use MONEY_OPERATIONS`);
    }
    const byHand = /\b(CHARGES_ROUTE|REFUNDS_ROUTE)\b|"\/api\/(charges|refunds)"/;
    assert.doesNotMatch(source, byHand, `${file} lists a route`);
  }
  // A route's refusal comes with the writes that can decline it (MoneyOperation's `declines`), never apart.
  assert.doesNotMatch(read("src/server/operations/submitOperation.ts"), /\.refusal!|\batClaim\?\.\(/);
});
