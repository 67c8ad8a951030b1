/**
 * Points the simulated gateway's webhooks at the app (src/gateway-sim/webhooks.ts): what a deployment does once in
 * Stripe's dashboard. `npm start` does it for its simulator; a test does it for as long as it needs the events.
 */
const EVENTS = ["payment_intent.succeeded", "payment_intent.payment_failed", "refund.updated"];

export const gatewayEventsUrl = (appUrl: string) => `${appUrl}/api/gateway/events`;

/** Registers the app's endpoint with `secret` (replacing one for the same URL); its id, to remove it later. */
export async function registerGatewayWebhook(gatewayUrl: string, appUrl: string, secret: string): Promise<string> {
  const url = gatewayEventsUrl(appUrl);
  await removeGatewayWebhooks(gatewayUrl, url);
  const form = new URLSearchParams({ url, secret });
  for (const type of EVENTS) form.append("enabled_events[]", type);
  const res = await fetch(`${gatewayUrl}/v1/webhook_endpoints`, { method: "POST", body: form });
  if (!res.ok) throw new Error(`the simulator refused the webhook endpoint: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** Removes every endpoint the simulator sends to `url`. */
export async function removeGatewayWebhooks(gatewayUrl: string, url: string): Promise<void> {
  const listed = (await (await fetch(`${gatewayUrl}/v1/webhook_endpoints`)).json()) as {
    data: { id: string; url: string }[];
  };
  for (const e of listed.data.filter((e) => e.url === url)) {
    await fetch(`${gatewayUrl}/v1/webhook_endpoints/${e.id}`, { method: "DELETE" });
  }
}
