/**
 * A CPU profile of a running app, for the benchmarks (`bench:storm -- --profile`): loaded into the app with
 * NODE_OPTIONS="--require ./bench/profile.cjs" and BENCH_PROFILE_DIR set. The first SIGUSR2 starts V8's sampling
 * profiler in the process, the next one writes what it sampled to BENCH_PROFILE_DIR/<pid>.cpuprofile (the format
 * Chrome's DevTools open). Anything else loaded with it (the gateway) only listens. In the process itself, through
 * node:inspector, because Node.js refuses --cpu-prof in NODE_OPTIONS.
 */
const { Session } = require("node:inspector");
const { writeFileSync } = require("node:fs");
const { join } = require("node:path");

const dir = process.env.BENCH_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  const post = (method, params = {}) =>
    new Promise((resolve, reject) => session.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));
  let running = false;
  process.on("SIGUSR2", async () => {
    try {
      if (!running) {
        running = true;
        await post("Profiler.enable");
        await post("Profiler.setSamplingInterval", { interval: 500 });
        await post("Profiler.start");
        return;
      }
      running = false;
      const { profile } = await post("Profiler.stop");
      writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(profile));
    } catch (error) {
      console.error("bench/profile.cjs:", error);
    }
  });
}
