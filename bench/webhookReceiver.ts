/**
 * bench/webhooks.ts's receiver, a process of its own (the merchant's server: in the bench's process it would take
 * its event loop from the load generator): answers every POST 200 at once and keeps when each webhook-id first
 * arrived; GET /received answers them as JSON. Prints its port on the first line of stdout.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

const receivedAt: Record<string, number> = {};
const server = http.createServer((req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(receivedAt));
    return;
  }
  const id = String(req.headers["webhook-id"]);
  req.resume();
  req.on("end", () => {
    receivedAt[id] ??= Date.now();
    res.writeHead(200).end();
  });
});
server.listen(0, "127.0.0.1", () => console.log((server.address() as AddressInfo).port));
