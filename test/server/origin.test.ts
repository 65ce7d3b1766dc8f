import { afterEach, describe, expect, it } from "vitest";
import { request as httpRequest } from "node:http";
import { startServer, type StartedServer } from "../../src/server/listen.js";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness | undefined;
let open: StartedServer | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
  await h?.close();
  h = undefined;
});

/** Status and error code of GET /sessions with the right secret and exactly these headers (fetch cannot set Host). */
function status(port: number, headers: Record<string, string>): Promise<{ status: number; code?: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path: "/sessions", headers: { authorization: `Bearer ${TEST_SECRET}`, ...headers } }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => (text += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ...(res.statusCode === 403 ? { code: JSON.parse(text).error.code } : {}) }));
    });
    req.on("error", reject);
    req.end();
  });
}

const forbidden = { status: 403, code: "FORBIDDEN" };

describe("Origin must be the server's own: scheme, host and port", () => {
  it("refuses another scheme or port with the right secret; accepts the server's own origin under each of its names", async () => {
    h = await createRuntimeHarness();
    const { port } = await h.serve();
    const host = `127.0.0.1:${port}`;
    expect(await status(port, { host, origin: `http://127.0.0.1:${port}` })).toEqual({ status: 200 });
    expect(await status(port, { host, origin: `http://localhost:${port}` })).toEqual({ status: 200 });
    expect(await status(port, { host, origin: `http://[::1]:${port}` })).toEqual({ status: 200 });
    expect(await status(port, { host })).toEqual({ status: 200 });

    expect(await status(port, { host, origin: `https://127.0.0.1:${port}` })).toEqual(forbidden);
    expect(await status(port, { host, origin: `http://127.0.0.1:${port + 1}` })).toEqual(forbidden);
    expect(await status(port, { host, origin: "http://127.0.0.1" })).toEqual(forbidden);
    expect(await status(port, { host, origin: "http://127.0.0.1:80" })).toEqual(forbidden);
    expect(await status(port, { host, origin: `ws://127.0.0.1:${port}` })).toEqual(forbidden);
    expect(await status(port, { host, origin: "null" })).toEqual(forbidden);
  });

  it("bound to every interface, the own origin is the Host header's, with the same scheme and port", async () => {
    h = await createRuntimeHarness();
    open = await startServer({ runtime: h.runtime, secret: TEST_SECRET, host: "0.0.0.0", port: 0, closeRuntime: false });
    const { port } = open;
    const host = `veil.lan:${port}`;
    expect(await status(port, { host, origin: `http://veil.lan:${port}` })).toEqual({ status: 200 });
    expect(await status(port, { host, origin: `https://veil.lan:${port}` })).toEqual(forbidden);
    expect(await status(port, { host, origin: `http://veil.lan:${port + 1}` })).toEqual(forbidden);
    expect(await status(port, { host, origin: "http://veil.lan" })).toEqual(forbidden);
    // A Host without a port names port 80 (a proxy in front), and so does an Origin without one.
    expect(await status(port, { host: "veil.lan", origin: "http://veil.lan" })).toEqual({ status: 200 });
    expect(await status(port, { host: "veil.lan", origin: "http://veil.lan:8080" })).toEqual(forbidden);
  });

  it("an origin listed in server.allowedOrigins is accepted whatever its scheme and port (a UI behind TLS)", async () => {
    h = await createRuntimeHarness({ settings: { server: { allowedOrigins: ["https://127.0.0.1:8443"] } } });
    const { port } = await h.serve();
    const host = `127.0.0.1:${port}`;
    expect(await status(port, { host, origin: "https://127.0.0.1:8443" })).toEqual({ status: 200 });
    expect(await status(port, { host, origin: `https://127.0.0.1:${port}` })).toEqual(forbidden);
  });
});
