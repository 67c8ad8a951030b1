/**
 * What /docs shows an integrator, run against the server (through each gateway): every operation's curl sample
 * (by bash and curl) and SDK sample (by Node, importing @charges/client), in the order an integrator runs them,
 * with the examples' keys and ids swapped for this run's; and every test card's documented first answer.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { TEST_CARDS } from "~/gateway-sim/testCards";
import { env } from "~/env";
import { openApiDocument } from "~/server/openapi";
import { MONEY_OPERATIONS } from "~/server/moneyRoutes";
import { SAMPLE } from "~/server/openapiExamples";
import { APP_URL, chargeBody, closeConnections, newApiClient, postCharge } from "./helpers";

const exec = promisify(execFile);
const root = path.resolve(import.meta.dirname, "..");
const doc = JSON.parse(JSON.stringify(openApiDocument));

type Sample = { lang: string; label: string; source: string };
const operations = Object.values<Record<string, { operationId: string; "x-codeSamples"?: Sample[] }>>(doc.paths)
  .flatMap((methods) => Object.values(methods))
  .map((op) => ({ id: op.operationId, samples: op["x-codeSamples"] ?? [] }));
const sampleOf = (operationId: string, label: string) =>
  operations.find((op) => op.id === operationId)!.samples.find((s) => s.label === label)!.source;

/**
 * The money routes in their list's order (a refund needs the charge made before it), each with its examples' key
 * and ids: a run swaps each for its own.
 */
const routes = MONEY_OPERATIONS.map(({ doc: { object, examples } }) => ({ object, examples }));

let apiKey: string;
let scratch: string;
before(async () => {
  ({ apiKey } = await newApiClient("docs samples"));
  scratch = await mkdtemp(path.join(tmpdir(), "docs-samples-"));
});
after(async () => {
  await rm(scratch, { recursive: true, force: true });
  await closeConnections();
});

/** A sample with the examples' values swapped for this run's: fresh keys, the ids it made, this server. */
const swapped = (source: string, values: Map<string, string>) =>
  [...values].reduce(
    (out, [example, real]) => out.replaceAll(example, real),
    source.replaceAll(SAMPLE.baseUrl, APP_URL),
  );

/** Fresh keys for every route's example key. */
const freshKeys = () => new Map<string, string>(routes.map((r) => [r.examples.key, randomUUID()]));

describe("every operation in /docs has samples", () => {
  test("a curl sample each, and an SDK sample for every operation the SDK makes (health and endpoints: none)", () => {
    // Webhook endpoints are set up once, by curl, the CLI or the dashboard: the SDK reads events, it does not
    // manage where they go.
    const withoutSdk = (id: string) => id === "health" || /WebhookEndpoint|WebhookSecret/.test(id);
    for (const { id, samples } of operations) {
      assert.ok(
        samples.some((s) => s.label === "curl"),
        `${id} has a curl sample`,
      );
      if (!withoutSdk(id))
        assert.ok(
          samples.some((s) => s.label === "@charges/client"),
          `${id} has an SDK sample`,
        );
    }
    const money = routes.flatMap((r) => [`create${r.object}`, `find${r.object}ByIdempotencyKey`, `get${r.object}`]);
    const events = ["listEvents", "getEvent"];
    const endpoints = ["list", "create", "get", "update", "delete"].map((verb) => `${verb}WebhookEndpoint`);
    assert.deepEqual(
      operations.map((op) => op.id).sort(),
      [...money, ...events, ...endpoints.map((e) => e.replace("listWebhookEndpoint", "listWebhookEndpoints"))]
        .concat(["rotateWebhookSecret", "health"])
        .sort(),
    );
  });
});

describe("the curl samples, run by bash", () => {
  const curl = async (operationId: string, values: Map<string, string>) => {
    const source = swapped(sampleOf(operationId, "curl"), values);
    const { stdout } = await exec("bash", ["-c", source], { env: { ...process.env, API: APP_URL, KEY: apiKey } });
    const [head, body] = stdout.split(/\r\n\r\n/);
    return { status: Number(head!.split(" ")[1]), head: head!, json: JSON.parse(body!) };
  };

  test("each route: create, its replay by key, the object by id; then health", async () => {
    const values = freshKeys();
    for (const { object, examples } of routes) {
      const created = await curl(`create${object}`, values);
      assert.equal(created.status, 201, `${object}: ${created.head}`);
      values.set(examples.created.id, created.json.id);
      const found = await curl(`find${object}ByIdempotencyKey`, values);
      assert.deepEqual([found.status, found.json.id], [201, created.json.id]);
      assert.match(found.head, /idempotent-replay: true/i);
      const read = await curl(`get${object}`, values);
      assert.deepEqual([read.status, read.json.id], [200, created.json.id]);
      assert.equal(read.json.amount_cents, examples.request.amount_cents);
    }
    assert.equal((await curl("health", values)).status, 200);
  });
});

describe("the SDK samples, run by Node with @charges/client", () => {
  const sdk = async (operationId: string, values: Map<string, string>) => {
    const file = path.join(scratch, `${operationId}-${randomUUID()}.mts`);
    await writeFile(file, swapped(sampleOf(operationId, "@charges/client"), values));
    const { stdout } = await exec(process.execPath, ["--import", "tsx", file], {
      cwd: root,
      env: { ...process.env, CHARGES_API_KEY: apiKey, TSX_TSCONFIG_PATH: path.join(root, "tsconfig.json") },
    });
    return stdout.trim();
  };

  test("each route: create, settled by key, read by id, each printing what it says", async () => {
    const values = freshKeys();
    for (const { object, examples } of routes) {
      const created = await sdk(`create${object}`, values);
      const [id, replayed] = created.split(" ");
      assert.match(id!, /^(ch|re)_[0-9a-f]{24}$/, `${object}: ${created}`);
      assert.equal(replayed, "false");
      values.set(examples.created.id, id!);
      assert.equal(await sdk(`find${object}ByIdempotencyKey`, values), id);
      assert.equal(await sdk(`get${object}`, values), `${id} ${examples.request.amount_cents}`);
    }
  });
});

describe("the test cards /docs lists", () => {
  const viaStripe = env.GATEWAY === "stripe";
  for (const card of TEST_CARDS.filter((c) => !viaStripe || c.stripe)) {
    test(`${card.example}: the first answer is ${card.answer.status} ${card.answer.code ?? ""}`, async () => {
      const res = await postCharge({ apiKey, key: randomUUID(), body: chargeBody({ card_token: card.example }) });
      assert.equal(res.status, card.answer.status, res.text);
      assert.equal(res.json.error?.code, card.answer.code);
      if (card.answer.declineCode) {
        const { sim, stripe } = card.answer.declineCode;
        assert.equal(res.json.error.decline_code, viaStripe ? stripe : sim);
      }
    });
  }
});
