import { connect, createServer, type Socket } from "node:net";

/**
 * A TCP hop in front of MariaDB that resets the first `cuts` connections at their first command after the
 * handshake, and passes everything else through: what a client sees when the server dies just as a new connection
 * is being set up (the driver's session settings are that first command). Reads the protocol's packet headers
 * only: a command is a packet with sequence id 0, and the handshake's own packets never have one.
 */
export async function setupCuttingProxy(upstreamPort: number, cuts: number) {
  let cut = 0;
  let passed = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(upstreamPort, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    }
    // Packets are read only until the first command; after it the proxy just passes bytes on.
    let unread = Buffer.alloc(0);
    let commandSeen = false;
    client.on("data", (chunk: Buffer) => {
      if (!commandSeen) {
        unread = Buffer.concat([unread, chunk]);
        while (!commandSeen && unread.length >= 4 && unread.length >= 4 + unread.readUIntLE(0, 3)) {
          commandSeen = unread[3] === 0;
          unread = unread.subarray(4 + unread.readUIntLE(0, 3));
        }
        if (commandSeen && cut < cuts) {
          cut += 1;
          client.resetAndDestroy(); // an RST: the client's read fails with ECONNRESET, as when the server is killed
          upstream.destroy();
          return;
        }
        if (commandSeen) passed += 1;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (c: Buffer) => client.write(c));
    upstream.on("close", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("error", () => {});
    client.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  return {
    port,
    /** Connections reset at their first command so far. */
    cut: () => cut,
    /** Connections whose first command went through. */
    passed: () => passed,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}
