/**
 * An OperationStore in one JSON file (Node only: import it from "@charges/client/fileOperationStore").
 * Every change is written to a temporary file, flushed to disk and renamed over the old one, so a crash
 * leaves either the old or the new content, never half of it. One process per file: it does not lock
 * against other processes (use a database for that, see the README).
 */
import { mkdir, open, readFile, rename } from "node:fs/promises";
import path from "node:path";
import type { OperationStore, StoredOperation } from "./operationStore.js";

type Contents = Record<string, StoredOperation>;

export class FileOperationStore implements OperationStore {
  /** Changes run one after another, each on the file's latest content. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly file: string) {}

  saveIfAbsent(operation: StoredOperation): Promise<StoredOperation> {
    return this.change((all) => {
      const stored = all[operation.reference] ?? operation;
      all[operation.reference] = stored;
      return { ...stored };
    });
  }

  async get(reference: string): Promise<StoredOperation | undefined> {
    await this.queue.catch(() => {});
    return (await this.read())[reference];
  }

  settle(reference: string, settled: NonNullable<StoredOperation["settled"]>): Promise<void> {
    return this.change((all) => {
      const stored = all[reference];
      if (stored) stored.settled = settled;
    });
  }

  async list(): Promise<StoredOperation[]> {
    await this.queue.catch(() => {});
    return Object.values(await this.read());
  }

  private change<T>(apply: (all: Contents) => T): Promise<T> {
    const run = this.queue
      .catch(() => {})
      .then(async () => {
        const all = await this.read();
        const result = apply(all);
        await this.write(all);
        return result;
      });
    this.queue = run;
    return run;
  }

  private async read(): Promise<Contents> {
    try {
      return JSON.parse(await readFile(this.file, "utf8")) as Contents;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw error;
    }
  }

  private async write(all: Contents): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    const handle = await open(temporary, "w");
    try {
      await handle.writeFile(JSON.stringify(all, null, 2));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.file);
  }
}
