import { afterEach, describe, expect, it } from "vitest";
import { createServer, request as httpRequest, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { closeIdleConnectionsAfterReading } from "../../src/server/keep-alive.js";
import { startServer, type StartedServer } from "../../src/server/listen.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

/** Node arms a kept-alive socket's timer this much past the advertised timeout. */
const NODE_KEEP_ALIVE_BUFFER_MS = 1000;

let server: Server | undefined;
let client: Socket | undefined;
let h: RuntimeHarness | undefined;
let open: StartedServer | undefined;
afterEach(async () => {
  client?.destroy();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await open?.close();
  open = undefined;
  await h?.close();
  h = undefined;
});

/** A plain HTTP server with Veil's keep-alive handling, its timeout shortened to the least Node allows. */
async function shortKeepAliveServer(): Promise<number> {
  server = createServer((_req, res) => res.end("ok"));
  closeIdleConnectionsAfterReading(server);
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** A raw client connection that records what it received and how it ended. */
function rawClient(port: number) {
  const seen = { text: "", error: undefined as NodeJS.ErrnoException | undefined, ended: false };
  const socket = connect(port, "127.0.0.1");
  client = socket;
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => (seen.text += chunk));
  socket.on("error", (error) => (seen.error = error));
  socket.on("end", () => (seen.ended = true));
  const closed = new Promise<boolean>((resolve) => socket.once("close", resolve));
  const responses = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => (seen.text.split("HTTP/1.1 200").length - 1 >= n && seen.text.endsWith("ok") ? resolve() : undefined);
      socket.on("data", check);
      socket.once("close", () => reject(new Error(`connection closed after ${JSON.stringify(seen.text)} (${seen.error?.code ?? "no error"})`)));
      check();
    });
  return { socket, seen, closed, responses };
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n`;

/** Holds this thread (and so the server's event loop) without running anything, as a loop busy with other work. */
function stallEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe("kept-alive connections", () => {
  it("answers a request that arrived while the loop was stalled past the keep-alive timeout", async () => {
    const port = await shortKeepAliveServer();
    const c = rawClient(port);
    c.socket.write(get("/first"));
    await c.responses(1);
    // The next request reaches the server's kernel buffer at once; the loop then stalls past the
    // socket's keep-alive deadline, so its timer is due before the loop reads the request.
    c.socket.write(get("/second"));
    stallEventLoop(1 + NODE_KEEP_ALIVE_BUFFER_MS + 200);
    await c.responses(2);
    expect(c.seen.error).toBeUndefined();
    expect(c.socket.destroyed).toBe(false);
  });

  it("closes a connection left idle past the timeout with a clean end, not a reset", async () => {
    const port = await shortKeepAliveServer();
    const c = rawClient(port);
    c.socket.write(get("/only"));
    await c.responses(1);
    const hadError = await c.closed;
    expect({ hadError, ended: c.seen.ended, error: c.seen.error?.code }).toEqual({ hadError: false, ended: true, error: undefined });
  });

  it("veil serve advertises its 5 s keep-alive timeout", async () => {
    h = await createRuntimeHarness();
    open = await startServer({ runtime: h.runtime, secret: TEST_SECRET, port: 0, closeRuntime: false });
    const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port: open!.port, path: "/health", agent: false, headers: { connection: "keep-alive" } }, (res) => {
        res.resume();
        resolve(res.headers);
      });
      req.on("error", reject);
      req.end();
    });
    expect(headers["keep-alive"]).toBe("timeout=5");
  });
});
