/**
 * `npm run webhooks -- <command>`: webhook endpoints from the command line, for setup and automation. The same
 * operations as the dashboard and the API (src/server/webhooks), audited with the actor `cli:<os user>@<host>`
 * (or `--actor <name>`). A signing secret is printed once.
 */
import { positiveInt, required, runCli, UsageError } from "./lib/cli";

function endpointId(id: string | undefined): string {
  if (!id?.startsWith("we_")) throw new UsageError("name the endpoint by its id (we_...)");
  return id;
}

const USAGE = `usage: npm run webhooks -- <command>
  list [--client <id>]                                   endpoints, their state and why one is disabled
  create --client <id> --url <url> [--events a,b|*]      a new endpoint and its signing secret (shown once)
  rotate <endpoint id> [--overlap-hours 24]              a new secret; the old one signs too for the overlap
  enable <endpoint id> | disable <endpoint id>           re-enable (clears the failing streak) or stop deliveries
  delete <endpoint id>                                   removes it; its pending deliveries are cancelled
  test <endpoint id>                                     sends it a webhook.test event
  deliveries <endpoint id>                               its latest deliveries and their state
every command: --actor <name>   who is acting, for the audit log (default: the OS user @ this host)`;

await runCli(
  USAGE,
  {
    client: { type: "string" },
    url: { type: "string" },
    events: { type: "string" },
    "overlap-hours": { type: "string" },
  },
  {
    async list(values) {
      const { listEndpoints } = await import("~/server/webhooks/endpoints");
      const client = values.client === undefined ? null : positiveInt(String(values.client), "--client");
      for (const e of await listEndpoints(client)) {
        const state = e.enabled ? "enabled" : `disabled: ${e.disabledReason ?? ""}`;
        console.log(`${e.id} client #${e.apiClientId} ${e.url} [${e.eventTypes}] ${state}`);
      }
    },
    async create(values, _positionals, audit) {
      const { createEndpoint } = await import("~/server/webhooks/endpoints");
      const client = positiveInt(required(values, "client"), "--client");
      const events = typeof values.events === "string" ? values.events.split(",").map((t) => t.trim()) : ["*"];
      const { endpoint, secret } = await createEndpoint(
        client,
        { url: required(values, "url"), eventTypes: events },
        audit,
      );
      console.log(
        `endpoint ${endpoint.id} for client #${client}: ${endpoint.url}\nsigning secret (shown once): ${secret}`,
      );
    },
    async rotate(values, [id], audit) {
      const { rotateSecret } = await import("~/server/webhooks/endpoints");
      const hours = values["overlap-hours"] === undefined ? 24 : Number(values["overlap-hours"]);
      if (!Number.isFinite(hours) || hours < 0) throw new Error("--overlap-hours must be 0 or more");
      const { endpoint, secret } = await rotateSecret(null, endpointId(id), audit, hours * 3_600_000);
      const until = endpoint.previousSecretUntil?.toISOString();
      console.log(`new signing secret (shown once): ${secret}\nthe previous one also signs until ${until}`);
    },
    async enable(_values, [id], audit) {
      const { updateEndpoint } = await import("~/server/webhooks/endpoints");
      await updateEndpoint(null, endpointId(id), { enabled: true }, audit);
      console.log(`endpoint ${id} enabled`);
    },
    async disable(_values, [id], audit) {
      const { updateEndpoint } = await import("~/server/webhooks/endpoints");
      await updateEndpoint(null, endpointId(id), { enabled: false }, audit);
      console.log(`endpoint ${id} disabled`);
    },
    async delete(_values, [id], audit) {
      const { deleteEndpoint } = await import("~/server/webhooks/endpoints");
      await deleteEndpoint(null, endpointId(id), audit);
      console.log(`endpoint ${id} deleted`);
    },
    async test(_values, [id], audit) {
      const { sendTestEvent } = await import("~/server/webhooks/deliveries");
      console.log(`test event ${await sendTestEvent(endpointId(id), audit)} queued`);
    },
    async deliveries(_values, [id]) {
      const { deliveriesOfEndpoint } = await import("~/server/webhooks/deliveries");
      for (const d of await deliveriesOfEndpoint(endpointId(id))) {
        const next = d.nextAttemptAt ? ` next ${d.nextAttemptAt.toISOString()}` : "";
        const last = d.lastStatus ?? d.lastError ?? "";
        console.log(`${d.id} ${d.eventId} ${d.eventType} ${d.state} attempts ${d.attempts}${next} ${last}`);
      }
    },
  },
);
