import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { FileOperationStore } from "@charges/client/fileOperationStore";

const dir = await mkdtemp(path.join(tmpdir(), "operation-store-"));
after(() => rm(dir, { recursive: true, force: true }));

const operation = (reference: string, idempotencyKey: string) => ({
  reference,
  idempotencyKey,
  body: "{}",
  createdAt: new Date().toISOString(),
});

describe("FileOperationStore", () => {
  test("what one instance saved, a new instance (a restarted process) reads", async () => {
    const file = path.join(dir, "a", "operations.json");
    const first = new FileOperationStore(file);
    await first.saveIfAbsent(operation("order-1", "key-1"));
    await first.settle("order-1", { status: 201, replayed: false, at: "2026-01-01T00:00:00Z" });
    await first.saveIfAbsent(operation("order-2", "key-2"));

    const second = new FileOperationStore(file);
    assert.equal((await second.get("order-1"))!.settled!.status, 201);
    assert.deepEqual((await second.list()).map((op) => op.idempotencyKey).sort(), ["key-1", "key-2"]);
    assert.ok(JSON.parse(await readFile(file, "utf8"))["order-2"], "plain JSON on disk");
  });

  test("the first writer of a reference wins, also when saves race", async () => {
    const store = new FileOperationStore(path.join(dir, "race.json"));
    const results = await Promise.all(["k1", "k2", "k3"].map((k) => store.saveIfAbsent(operation("same", k))));
    assert.deepEqual(
      results.map((r) => r.idempotencyKey),
      ["k1", "k1", "k1"],
    );
    assert.equal((await store.get("same"))!.idempotencyKey, "k1");
  });

  test("an unknown reference is undefined; a missing file is an empty store", async () => {
    const store = new FileOperationStore(path.join(dir, "none.json"));
    assert.equal(await store.get("x"), undefined);
    assert.deepEqual(await store.list(), []);
  });
});
