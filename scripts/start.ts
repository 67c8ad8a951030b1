/**
 * `npm start`: everything a new user needs, on one command. Database (a private
 * MariaDB if none runs), migrations, the app's own database user, a demo API
 * client and demo staff (not with NODE_ENV=production), the simulated gateway,
 * the production build of the app and the background sweeper.
 */
import { provisionAppUser } from "./lib/appUser";
import { devConfig, loadDotEnv } from "./lib/config";
import { createDatabase } from "./lib/mariadbServer";
import { prepareDatabase } from "./lib/prepareDatabase";
import { run, startApp, startGateway, startSweeper, type Service } from "./lib/processes";

loadDotEnv();
const config = devConfig();
Object.assign(process.env, config.env);

function gatewayDescription(): string {
  const simulator = `http://127.0.0.1:${config.gatewayPort} (simulated)`;
  if (config.env.GATEWAY !== "stripe") return simulator;
  const base = process.env.STRIPE_API_BASE;
  if (!base) return "Stripe adapter -> api.stripe.com";
  return `Stripe adapter -> ${base === config.env.GATEWAY_URL ? simulator : base}`;
}

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
  services.push(startSweeper(config.env));

  console.log(`
Charges is running.
  API        ${app.url}/api/charges
  Dashboard  ${app.url}/admin
  Gateway    ${gatewayDescription()}
`);
  if (!demo) {
    console.log(`NODE_ENV=production: no demo data. Create the first engineer and an API client:
  npm run staff -- create --email you@example.com --name "Your Name" --role engineer
  npm run clients -- create --name "First client" --email ops@client.example

Ctrl-C stops everything.`);
  } else
    console.log(`Demo API key (shown once; rotated on every start):
  ${demo.apiKey}

Try it:
  curl -s ${app.url}/api/charges -H "Authorization: Bearer ${demo.apiKey}" \\
    -H "Content-Type: application/json" -H "Idempotency-Key: $(uuidgen 2>/dev/null || echo demo-1)" \\
    -d '{"amount_cents": 1999, "currency": "usd", "card_token": "tok_visa"}'

Dashboard logins:
${demo.staff.map((s) => `  ${s.role.padEnd(9)} ${s.email} / ${s.password}`).join("\n")}

Ctrl-C stops everything.`);

  // If any part dies, stop the rest rather than run half an app.
  await Promise.race(services.map((s) => new Promise((r) => s.child.once("exit", () => r(s.name)))));
  console.error("a service exited; stopping");
} finally {
  await stopAll();
}
process.exit(1);
