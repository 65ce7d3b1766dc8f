import { connect, createServer, type Server } from "node:net";

/**
 * Inside a sandbox without the host's network, Veil's proxy is a unix socket on the host;
 * HTTP clients want a TCP address. This listens on the sandbox's own loopback and pipes
 * each connection to that socket, byte for byte (the proxy does all the checking).
 */
export function startForwarder(socketPath: string, port: number): Promise<Server> {
  const server = createServer((client) => {
    const upstream = connect(socketPath);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
    client.pipe(upstream).pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}
