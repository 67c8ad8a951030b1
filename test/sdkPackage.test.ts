/**
 * The SDK as an integrator gets it: `npm pack` of packages/client (its prepack builds JavaScript with tsc), the
 * tarball installed offline into a scratch project outside the repository, then plain Node (no TypeScript
 * tooling) makes a charge, its replay and a refund against the real server; tsc checks a TypeScript consumer
 * against the installed types. The package is copied out first, so runs side by side never build into one dist/.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cp, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { APP_URL, closeConnections, db, gatewayCharges, gatewayRefunds, newApiClient } from "./helpers";

const exec = promisify(execFile);
const root = path.resolve(import.meta.dirname, "..");

let scratch: string;
let project: string;
let apiKey: string;
before(async () => {
  ({ apiKey } = await newApiClient("sdk package"));
  scratch = await mkdtemp(path.join(tmpdir(), "charges-client-"));
  // The package's own files, with the repository's tools (tsc, @types/node) for its build.
  const source = path.join(scratch, "client");
  await mkdir(source);
  for (const file of ["package.json", "tsconfig.json", "README.md", "src"])
    await cp(path.join(root, "packages/client", file), path.join(source, file), { recursive: true });
  await symlink(path.join(root, "node_modules"), path.join(source, "node_modules"));
  await exec("npm", ["pack", "--pack-destination", scratch], { cwd: source });
  const tarball = (await readdir(scratch)).find((f) => f.endsWith(".tgz"));
  assert.ok(tarball, "npm pack wrote a tarball");

  project = path.join(scratch, "shop");
  await mkdir(project);
  await writeFile(path.join(project, "package.json"), JSON.stringify({ name: "shop", private: true, type: "module" }));
  const install = ["install", "--offline", "--no-audit", "--no-fund", path.join(scratch, tarball)];
  await exec("npm", install, { cwd: project });
});
after(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
  await closeConnections();
});

describe("@charges/client, packed and installed", () => {
  test("ships JavaScript and types only: dist/, no TypeScript sources", async () => {
    const installed = path.join(project, "node_modules/@charges/client");
    assert.deepEqual((await readdir(installed)).sort(), ["README.md", "dist", "package.json"]);
    const dist = await readdir(path.join(installed, "dist"));
    assert.ok(dist.includes("index.js") && dist.includes("index.d.ts"), dist.join(" "));
    assert.deepEqual(
      dist.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")),
      [],
    );
  });

  test("plain Node makes a charge, its replay and a refund against the server", async () => {
    const customer = `cus_${randomUUID().slice(0, 12)}`;
    await writeFile(
      path.join(project, "shop.mjs"),
      `import { ChargesClient, API_ERRORS } from "@charges/client";
const client = new ChargesClient({ baseUrl: process.env.CHARGES_URL, apiKey: process.env.CHARGES_API_KEY });
const key = crypto.randomUUID();
const params = { amount_cents: 1999, currency: "usd", card_token: "tok_visa", customer_id: "${customer}" };
const first = await client.createCharge(params, { idempotencyKey: key });
const again = await client.createCharge(params, { idempotencyKey: key });
const refund = await client.refunds.create({ charge: first.charge.id, amount_cents: 500, reason: "duplicate" });
console.log(JSON.stringify({
  first: { ok: first.ok, id: first.charge?.id, replayed: first.replayed },
  again: { ok: again.ok, id: again.charge?.id, replayed: again.replayed },
  refund: { ok: refund.ok, id: refund.refund?.id, amount: refund.refund?.amount_cents, charge: refund.refund?.charge },
  registry: API_ERRORS.request_in_progress.action,
}));
`,
    );
    const { stdout } = await exec(process.execPath, ["shop.mjs"], {
      cwd: project,
      env: { ...process.env, CHARGES_URL: APP_URL, CHARGES_API_KEY: apiKey },
    });
    const out = JSON.parse(stdout);
    assert.deepEqual(out.first, { ok: true, id: out.first.id, replayed: false });
    assert.deepEqual(out.again, { ok: true, id: out.first.id, replayed: true }, "the same charge, replayed");
    assert.deepEqual(out.refund, { ok: true, id: out.refund.id, amount: 500, charge: out.first.id });
    assert.equal(out.registry, "retry");

    // What the gateway and the app really did: one charge, one refund.
    assert.equal((await gatewayCharges(customer)).length, 1);
    assert.equal((await gatewayRefunds(out.first.id)).length, 1);
    assert.equal(await db.refund.count({ where: { chargeId: out.first.id } }), 1);
  });

  test("its types check a TypeScript consumer, and refuse a wrong one", async () => {
    await writeFile(
      path.join(project, "typed.ts"),
      `import { ChargesClient, type ChargeResult, type ApiErrorCode } from "@charges/client";
import { FileOperationStore } from "@charges/client/fileOperationStore";
const store = new FileOperationStore("ops.json");
const client = new ChargesClient({ baseUrl: "http://127.0.0.1:3000", apiKey: "sk_test", store });
const params = { amount_cents: 1999, currency: "usd", card_token: "tok_visa" };
const result: Promise<ChargeResult> = client.createCharge(params, { reference: "order-1/charge" });
const code: ApiErrorCode = "request_in_progress";
// @ts-expect-error amount_cents is a number
client.createCharge({ amount_cents: "1999", currency: "usd", card_token: "tok_visa" });
export { code, result };
`,
    );
    // No @types/node in the scratch project: the package's types must not need them.
    const compilerOptions = {
      noEmit: true,
      strict: true,
      module: "nodenext",
      target: "es2022",
      lib: ["es2023", "dom"],
    };
    await writeFile(path.join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["typed.ts"] }));
    await exec(path.join(root, "node_modules/.bin/tsc"), ["-p", "."], { cwd: project });

    // And a consumer that misuses it is refused: the check above is not vacuous.
    await writeFile(
      path.join(project, "typed.ts"),
      `import { ChargesClient } from "@charges/client";\nnew ChargesClient({});\n`,
    );
    await assert.rejects(exec(path.join(root, "node_modules/.bin/tsc"), ["-p", "."], { cwd: project }), (error) =>
      /TS2345.*baseUrl/s.test((error as { stdout: string }).stdout),
    );
  });
});
