/**
 * `npm start`: everything a new user needs, on one command. Database (a private
 * MariaDB if none runs), migrations, the app's own database user, a demo API
 * client and demo staff (not with NODE_ENV=production), the simulated gateway,
 * the production build of the app, the background sweeper and the webhook dispatcher.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { parseMysqlUrl } from "../src/lib/mysqlUrl";
import { provisionAppUser } from "./lib/appUser";
import { devConfig, loadDotEnv } from "./lib/config";
import { registerGatewayWebhook } from "./lib/gatewayWebhook";
import { createDatabase } from "./lib/mariadbServer";
import { prepareDatabase } from "./lib/prepareDatabase";
import { run, startApp, startDispatcher, startGateway, startSweeper, type Service } from "./lib/processes";

loadDotEnv();
const databaseFrom = ["DATABASE_ADMIN_URL", "DATABASE_URL"].find((name) => process.env[name]) ?? "the default";
const config = devConfig();
Object.assign(process.env, config.env);

function gatewayDescription(): string {
  const simulator = `http://127.0.0.1:${config.gatewayPort} (simulated)`;
  if (config.env.GATEWAY !== "stripe") return simulator;
  const base = process.env.STRIPE_API_BASE;
  if (!base) return "Stripe adapter -> api.stripe.com";
  return `Stripe adapter -> ${base === config.env.GATEWAY_URL ? simulator : base}`;
}

/** Stops now, not after the build's minutes, when something already listens there (another `npm start`?). */
async function assertFree(port: number, variable: string) {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", () =>
      reject(new Error(`port ${port} is taken (another npm start?): choose another with ${variable}=<port>`)),
    );
    server.listen(port, "127.0.0.1", () => server.close(() => resolve()));
  });
}

const { hosts, database } = parseMysqlUrl(config.databaseUrl);
console.log(`npm start: the app on port ${config.appPort} (PORT), the simulated gateway on ${config.gatewayPort} \
(GATEWAY_PORT), the database ${database} on ${hosts.map((h) => `${h.host}:${h.port}`).join(",")} (${databaseFrom}).`);
await assertFree(config.appPort, "PORT");
await assertFree(config.gatewayPort, "GATEWAY_PORT");

const production = process.env.NODE_ENV === "production";
const privateDb = await prepareDatabase(config.databaseUrl);
await createDatabase(config.gatewayDatabaseUrl);
// Migrations ran as the admin user; the app and the sweeper get a user of their own.
config.env.DATABASE_URL = await provisionAppUser(config.databaseUrl);
const { seedDemo } = await import("./lib/seed");
const demo = production ? null : await seedDemo();

await run("next", ["build"], { ...config.env, NODE_ENV: "production" });

const services: Service[] = [];
const stopAll = async () => {
  for (const service of services.reverse()) await service.stop();
  await privateDb?.stop();
};
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => void stopAll().then(() => process.exit(0)));

try {
  services.push(await startGateway({ port: config.gatewayPort, databaseUrl: config.gatewayDatabaseUrl }));
  const app = await startApp({ port: config.appPort, env: config.env });
  services.push(app);
  // The simulator's events settle unknown outcomes at once (Stripe's are registered in its dashboard: docs/stripe.md).
  const simulator = `http://127.0.0.1:${config.gatewayPort}`;
  await registerGatewayWebhook(simulator, app.url, config.env.GATEWAY_WEBHOOK_SECRET!);
  services.push(startSweeper(config.env));
  services.push(startDispatcher(config.env));

  console.log(`
Charges is running.
  API        ${app.url}/api/charges   (reference: ${app.url}/docs)
  Dashboard  ${app.url}/admin
  Gateway    ${gatewayDescription()}
`);
  // `next start` runs the app with NODE_ENV=production, where engineers need a second factor unless switched off.
  const twoFactor =
    process.env.STAFF_REQUIRE_2FA === "false"
      ? ""
      : `Engineers act only after two-factor sign-in: sign in, open Account, "Set up two-factor sign-in" (your
password, then the QR code or the key in an authenticator app, then its code). That session may act at once;
later sign-ins ask for a code. STAFF_REQUIRE_2FA=false npm start skips it on your own machine.
`;
  if (!demo) {
    console.log(`NODE_ENV=production: no demo data. Create the first engineer and an API client:
  npm run staff -- create --email you@example.com --name "Your Name" --role engineer
  npm run clients -- create --name "First client" --email ops@client.example
${twoFactor}
Ctrl-C stops everything.`);
  } else
    console.log(`Demo API key (shown once; rotated on every start):
  ${demo.apiKey}

Try it: a charge under an Idempotency-Key made once for it. Send it again, same key: the answer is the first one,
replayed (Idempotent-Replay: true), and nobody is charged twice. A new charge needs a new key (a UUID):
node -p 'crypto.randomUUID()' prints one.
  curl -s -i ${app.url}/api/charges -H "Authorization: Bearer ${demo.apiKey}" \\
    -H "Content-Type: application/json" -H "Idempotency-Key: ${randomUUID()}" \\
    -d '{"amount_cents": 1999, "currency": "usd", "card_token": "tok_visa"}'

Dashboard logins:
${demo.staff.map((s) => `  ${s.role.padEnd(9)} ${s.email} / ${s.password}`).join("\n")}
${twoFactor}
Ctrl-C stops everything.`);

  // If any part dies, stop the rest rather than run half an app.
  await Promise.race(services.map((s) => new Promise((r) => s.child.once("exit", () => r(s.name)))));
  console.error("a service exited; stopping");
} finally {
  await stopAll();
}
process.exit(1);
