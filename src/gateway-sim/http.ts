/** What every handler of the simulator needs of node:http: a JSON answer, a whole body, a pause. */
import type { IncomingMessage, ServerResponse } from "node:http";

export function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body));
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
