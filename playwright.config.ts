import { defineConfig } from "@playwright/test";

// Runs against the stack that `npm test` (scripts/test.ts) starts; TEST_APP_URL says where.
export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results",
  timeout: 60_000,
  workers: 1,
  reporter: [["list"]],
  use: {
    baseURL: process.env.TEST_APP_URL ?? "http://127.0.0.1:3100",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
      ],
    },
    screenshot: "only-on-failure",
    trace: "off",
  },
});
