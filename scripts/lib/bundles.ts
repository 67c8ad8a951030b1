/**
 * A test run's TypeScript bundled to JavaScript before it starts (esbuild; packages stay in node_modules): node:test
 * starts a process per file and the runs start workers and gateways by the dozen, and loading one through tsx's
 * hooks cost about 1.7 s of CPU against 0.9 bundled. Bundled afresh by every run into its TEST_SLOT's own folder,
 * named to the processes it starts by TEST_BUNDLES (processes.ts), so what runs is what is on disk; source maps keep
 * failures' lines in the .ts files.
 */
import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build, type Plugin } from "esbuild";
import { root } from "./config";
import { bundleOf, SERVER_SCRIPTS } from "./processes";

/** import.meta.dirname and .url stay the source file's, not the bundle's: tests find the repository by them. */
const sourceLocation: Plugin = {
  name: "source-location",
  setup(bundler) {
    bundler.onLoad({ filter: /\.tsx?$/ }, async ({ path: file }) => {
      const text = await readFile(file, "utf8");
      if (!text.includes("import.meta.")) return undefined;
      const contents = text
        .replaceAll("import.meta.dirname", JSON.stringify(path.dirname(file)))
        .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(file).href));
      return { contents, loader: file.endsWith(".tsx") ? "tsx" : "ts" };
    });
  },
};

/** Next.js has no "exports" map: node's own resolution, unlike tsx's and Next's, wants `next/headers.js`. */
const nextSubpaths: Plugin = {
  name: "next-subpaths",
  setup(bundler) {
    bundler.onResolve({ filter: /^next\/[\w/-]+$/ }, ({ path: spec }) => ({ path: `${spec}.js`, external: true }));
  },
};

/** Bundles `files` (paths from the repository's root) into `dir`, emptied first; returns their bundles, in order. */
export async function bundle(files: string[], dir: string): Promise<string[]> {
  await rm(dir, { recursive: true, force: true });
  await build({
    entryPoints: files.map((file) => path.join(root, file)),
    outdir: dir,
    outbase: root,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    target: "node20",
    conditions: ["react-server"],
    sourcemap: "linked",
    logLevel: "warning",
    plugins: [sourceLocation, nextSubpaths],
  });
  return files.map((file) => bundleOf(dir, file));
}

/**
 * Bundles the server scripts (workers, the simulated gateway) and `files` into this TEST_SLOT's folder, sets
 * TEST_BUNDLES for this process and the ones it starts, and returns the bundles of `files`, in their order.
 */
export async function bundleForRun(files: string[] = []): Promise<string[]> {
  const dir = path.join(root, `.data/bundles/slot${process.env.TEST_SLOT ?? "0"}`);
  const bundles = await bundle([...SERVER_SCRIPTS, ...files], dir);
  process.env.TEST_BUNDLES = dir;
  return bundles.slice(SERVER_SCRIPTS.length);
}
