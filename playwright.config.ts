import { defineConfig } from "@playwright/test";

// Runs against the stack that `npm test` (scripts/test.ts) starts; TEST_APP_URL says where.
export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results",
  // A test's whole time guards against a hang, it is no verdict: beside a CPU hog, a long one (a slow card, a sweep,
  // five pages on a phone) took over 60 s.
  timeout: 120_000,
  // An assertion polls until its condition holds: the default 5 s is too short a deadline for a page's round trip on
  // a loaded CI machine (the suite runs six stacks on two cores); a passing assertion is no slower for it.
  expect: { timeout: 15_000 },
  workers: 1,
  reporter: [["list"]],
  use: {
    baseURL: process.env.TEST_APP_URL ?? "http://127.0.0.1:3100",
    launchOptions: {
      // Debian's headless build of Chromium (chromium-headless-shell: the same Blink and V8), which is what
      // Playwright itself runs headless tests on: a third less CPU than the full browser in headless mode.
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium-headless-shell",
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
