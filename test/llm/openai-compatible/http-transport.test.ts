import { afterEach, describe, expect, it, vi } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { createOpenAiProvider } from "../../../src/llm/openai-compatible/client.js";
import { nodeHttpTransport } from "../../../src/llm/openai-compatible/http-transport.js";
import type { StreamEvent } from "../../../src/llm/types.js";

const chunk = (content: string, finish: string | null = null) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;

let servers: Server[] = [];
afterEach(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  servers = [];
  vi.unstubAllEnvs();
});

/** A provider endpoint on 127.0.0.1 that counts its connections and sees the client close them. */
async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void, tls?: { key: Buffer; cert: Buffer }) {
  let connections = 0;
  let closes = 0;
  const closeWaiters: (() => void)[] = [];
  const server: Server = tls ? createTlsServer(tls) : createServer();
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => handler(req, res));
  });
  server.on(tls ? "secureConnection" : "connection", () => connections++);
  // Only the client closes idle connections here (the server's own 5 s keep-alive timeout is off), so "end", its FIN, says it did.
  server.keepAliveTimeout = 0;
  server.on("connection", (socket: Socket) =>
    socket.once("end", () => {
      closes++;
      for (const wake of closeWaiters.splice(0)) wake();
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  /** Resolves once the client has closed `count` connections. */
  const closedByClient = async (count: number) => {
    while (closes < count) await new Promise<void>((resolve) => closeWaiters.push(resolve));
  };
  return { url: `${tls ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, connections: () => connections, closedByClient };
}

async function ask(baseUrl: string): Promise<StreamEvent> {
  const provider = createOpenAiProvider("p", { type: "openai", baseUrl, apiKey: "k" }, { env: {} });
  let end: StreamEvent | undefined;
  for await (const event of provider.stream({ model: "m1", messages: [{ role: "user", content: "hi" }] })) end = event;
  return end!;
}

describe("the providers' HTTP transport (node:http)", () => {
  it("keeps one connection for a provider's requests, whether the stream ends with [DONE] or not", async () => {
    for (const sendDone of [true, false]) {
      const endpoint = await serve((_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(chunk("ok", "stop"));
        res.end(sendDone ? "data: [DONE]\n\n" : "");
      });
      const provider = createOpenAiProvider("p", { type: "openai", baseUrl: endpoint.url, apiKey: "k" }, { env: {} });
      for (let i = 0; i < 4; i++) {
        let end: StreamEvent | undefined;
        for await (const event of provider.stream({ model: "m1", messages: [{ role: "user", content: "hi" }] })) end = event;
        expect(end).toMatchObject({ type: "done", message: { content: "ok" } });
      }
      expect(endpoint.connections()).toBe(1);
    }
  });

  it("says it is sending (onSending), then that the request was sent (onSent), before any answer: a server that answers only after onSent never answers otherwise", async () => {
    let sent!: () => void;
    const wasSent = new Promise<void>((resolve) => (sent = resolve));
    // The server holds its answer until the client has said the request went out: without the call this never answers.
    const endpoint = await serve((_req, res) => {
      void wasSent.then(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(chunk("ok", "stop") + "data: [DONE]\n\n");
      });
    });
    const provider = createOpenAiProvider("p", { type: "openai", baseUrl: endpoint.url, apiKey: "k" }, { env: {} });
    const order: string[] = [];
    let end: StreamEvent | undefined;
    for await (const event of provider.stream({
      model: "m1",
      messages: [{ role: "user", content: "hi" }],
      onSending: () => order.push("sending"),
      onSent: () => {
        order.push("sent");
        sent();
      },
    })) {
      if (order.at(-1) !== "event") order.push("event");
      end = event;
    }
    expect(end).toMatchObject({ type: "done", message: { content: "ok" } });
    expect(order).toEqual(["sending", "sent", "event"]);
  });

  it("decodes a body a server or proxy compressed anyway (gzip stream, gzip error body)", async () => {
    const endpoint = await serve((req, res) => {
      if (req.url?.includes("fail")) {
        res.writeHead(503, { "content-type": "application/json", "content-encoding": "gzip" });
        res.end(gzipSync(JSON.stringify({ error: { message: "overloaded, compressed" } })));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
      res.end(gzipSync(chunk("zipped ") + chunk("stream", "stop") + "data: [DONE]\n\n"));
    });
    expect(await ask(endpoint.url)).toMatchObject({ type: "done", message: { content: "zipped stream" } });
    expect(await ask(`${endpoint.url}/fail`)).toMatchObject({ type: "error", error: { code: "PROVIDER_ERROR", status: 503, message: expect.stringContaining("overloaded, compressed") } });
  });

  it("speaks https to an https: base URL", async () => {
    const dir = mkdtempSync(join(tmpdir(), "veil-tls-"));
    try {
      execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
      const endpoint = await serve(
        (_req, res) => {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.end(chunk("over tls", "stop") + "data: [DONE]\n\n");
        },
        { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) },
      );
      // The test's certificate is its own; the transport uses Node's usual trust store.
      vi.stubEnv("NODE_TLS_REJECT_UNAUTHORIZED", "0");
      expect(await ask(endpoint.url)).toMatchObject({ type: "done", message: { content: "over tls" } });
      expect(await ask(endpoint.url)).toMatchObject({ type: "done", message: { content: "over tls" } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("sends a request again, once, when the server closed its kept-alive connection as it went out", async () => {
    const perConnection = new Map<unknown, number>();
    let requests = 0;
    const endpoint = await serve((req, res) => {
      requests++;
      const n = (perConnection.get(req.socket) ?? 0) + 1;
      perConnection.set(req.socket, n);
      // The second request on a connection finds it closing: reset, no answer.
      if (n === 2) return void req.socket.destroy();
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(chunk(`answer ${requests}`, "stop") + "data: [DONE]\n\n");
    });
    const provider = createOpenAiProvider("p", { type: "openai", baseUrl: endpoint.url, apiKey: "k" }, { env: {} });
    const ends: StreamEvent[] = [];
    for (let i = 0; i < 2; i++) {
      for await (const event of provider.stream({ model: "m1", messages: [{ role: "user", content: "hi" }] })) if (event.type === "done" || event.type === "error") ends.push(event);
    }
    expect(ends.map((e) => (e.type === "done" ? e.message.content : e.error.message))).toEqual(["answer 1", "answer 3"]);
    expect(endpoint.connections()).toBe(2);
  });

  it("closes an idle kept-alive connection after its idle limit, but never a busy one: a long wait for the first byte still answers", async () => {
    const endpoint = await serve((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.end(chunk("slow but fine", "stop") + "data: [DONE]\n\n");
      }, 600);
    });
    const transport = nodeHttpTransport({ idleConnectionMs: 150 });
    const provider = createOpenAiProvider("p", { type: "openai", baseUrl: endpoint.url, apiKey: "k" }, { env: {}, transport });
    const ask = async () => {
      let end: StreamEvent | undefined;
      for await (const event of provider.stream({ model: "m1", messages: [{ role: "user", content: "hi" }] })) end = event;
      return end;
    };
    expect(await ask()).toMatchObject({ type: "done", message: { content: "slow but fine" } });
    // Idle past the limit: the connection is closed on our side (the server sees it go), the next request opens one.
    await endpoint.closedByClient(1);
    expect(await ask()).toMatchObject({ type: "done", message: { content: "slow but fine" } });
    expect(endpoint.connections()).toBe(2);
  });

  it("does not follow a redirect: the error says where baseUrl should point", async () => {
    const endpoint = await serve((_req, res) => {
      res.writeHead(308, { location: "https://api.example/v1/chat/completions" });
      res.end();
    });
    expect(await ask(endpoint.url)).toMatchObject({
      type: "error",
      error: { code: "LLM_ERROR", status: 308, message: 'p: HTTP 308 for model "m1": redirected to https://api.example/v1/chat/completions; set the provider\'s baseUrl to the new address' },
    });
  });

  it("a refused connection is a retryable PROVIDER_ERROR naming the reason", async () => {
    const endpoint = await serve(() => undefined);
    const url = endpoint.url;
    servers[0]!.closeAllConnections();
    await new Promise((resolve) => servers[0]!.close(resolve));
    servers = [];
    expect(await ask(url)).toMatchObject({ type: "error", error: { code: "PROVIDER_ERROR", retryable: true, message: 'p: connection failed for model "m1" (ECONNREFUSED)' } });
  });
});
