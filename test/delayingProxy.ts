import { connect, createServer, type Socket } from "node:net";

/**
 * A TCP hop between the app and the gateway that holds every request it
 * receives, and delivers it only when told to: a request that reaches the
 * gateway late (a queue in a load balancer, a paused gateway process, a slow
 * network), after the app gave up on it. The gateway then processes it as the
 * real one would, whether or not the app is still listening.
 */
export async function delayingProxy(upstreamPort: number) {
  const held: { client: Socket; chunks: Buffer[] }[] = [];
  const server = createServer((client) => {
    const entry = { client, chunks: [] as Buffer[] };
    held.push(entry);
    client.on("data", (c: Buffer) => entry.chunks.push(c));
    client.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    /** How many requests (connections with bytes) are being held. */
    heldRequests: () => held.filter((h) => h.chunks.length > 0).length,
    /**
     * Delivers every held request to the gateway and waits for its answers: passed on to the app when
     * `answerTheApp` (the app is still waiting), else thrown away (the app gave up long ago).
     */
    async deliver({ answerTheApp = false } = {}): Promise<number> {
      const pending = held.splice(0).filter((h) => h.chunks.length > 0);
      await Promise.all(
        pending.map(
          ({ client, chunks }) =>
            new Promise<void>((resolve) => {
              const upstream = connect(upstreamPort, "127.0.0.1", () => upstream.write(Buffer.concat(chunks)));
              const done = () => {
                upstream.destroy();
                resolve();
              };
              upstream.on("data", (c: Buffer) => {
                if (answerTheApp && !client.destroyed) client.write(c);
                setTimeout(done, 200);
              });
              upstream.on("error", done);
              upstream.on("close", done);
              setTimeout(done, 15_000);
            }),
        ),
      );
      return pending.length;
    },
    close: () => {
      for (const h of held) h.client.destroy();
      server.close();
    },
  };
}
