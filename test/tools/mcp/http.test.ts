import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { sourceHarness, type SourceHarness } from "./helpers.js";

/** A streamable-HTTP MCP server built with the SDK's server classes (stateless: one server per request). */
async function startHttpServer(options: { token?: string } = {}): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const http: Server = createServer(async (req, res) => {
    seen.push(`${req.method} ${req.headers.authorization ?? "-"}`);
    if (options.token && req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unauthorized" }));
      return;
    }
    const mcp = new McpServer({ name: "http-test", version: "1.0.0" });
    mcp.registerTool("add", { description: "Add two numbers.", inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
    mcp.registerTool("whoami", { description: "Say which server answers." }, async () => ({ content: [{ type: "text", text: "the http server" }], structuredContent: undefined }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/** The older HTTP+SSE transport (`type: "sse"`), also built with the SDK's server classes. */
async function startSseServer(): Promise<{ url: string; close(): Promise<void> }> {
  const transports = new Map<string, SSEServerTransport>();
  const http: Server = createServer(async (req, res) => {
    if (req.method === "GET" && req.url === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      transports.set(transport.sessionId, transport);
      const mcp = new McpServer({ name: "sse-test", version: "1.0.0" });
      mcp.registerTool("shout", { description: "Uppercase a word.", inputSchema: { word: z.string() } }, async ({ word }) => ({ content: [{ type: "text", text: word.toUpperCase() }] }));
      await mcp.connect(transport);
      return;
    }
    const sessionId = new URL(req.url ?? "/", "http://x").searchParams.get("sessionId") ?? "";
    const transport = transports.get(sessionId);
    if (!transport) return void res.writeHead(404).end();
    await transport.handlePostMessage(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sse`,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

let h: SourceHarness;
let server: Awaited<ReturnType<typeof startHttpServer>> | undefined;
afterEach(async () => {
  await h?.close();
  await server?.close();
  server = undefined;
});

describe("MCP servers over streamable HTTP", { timeout: 30_000 }, () => {
  it("lists and calls the tools of an SDK-built server on 127.0.0.1, sending the configured headers", async () => {
    server = await startHttpServer({ token: "t0ken" });
    h = sourceHarness({ servers: { remote: { type: "http", url: server.url, headers: { Authorization: "Bearer ${REMOTE_TOKEN}" } } }, env: { ...process.env, REMOTE_TOKEN: "t0ken" } });
    const tools = await h.tools();
    expect(tools.map((t) => t.name).sort()).toEqual(["mcp__remote__add", "mcp__remote__whoami"]);
    expect(tools.find((t) => t.name === "mcp__remote__add")).toMatchObject({ description: "Add two numbers.", source: { scope: "mcp", server: "remote" } });
    expect((await h.call("mcp__remote__add", { a: 2, b: 40 })).output).toBe("42");
    expect(server.seen.every((line) => line.endsWith("Bearer t0ken"))).toBe(true);
  });

  it("speaks the older HTTP+SSE transport with type: sse", async () => {
    const sse = await startSseServer();
    try {
      h = sourceHarness({ servers: { old: { type: "sse", url: sse.url } } });
      expect((await h.tools()).map((t) => t.name)).toEqual(["mcp__old__shout"]);
      expect((await h.call("mcp__old__shout", { word: "hey" })).output).toBe("HEY");
    } finally {
      await h.close();
      await sse.close();
    }
  });

  it("a server that refuses the credentials is broken with the HTTP error", async () => {
    server = await startHttpServer({ token: "right" });
    h = sourceHarness({ servers: { remote: { type: "http", url: server.url, headers: { Authorization: "Bearer wrong" } } } });
    expect(await h.tools()).toEqual([]);
    expect(h.source.broken()).toEqual([{ scope: "mcp", server: "remote", reason: expect.stringMatching(/^MCP server "remote": could not connect: .*401/) }]);
  });

  it("an address nobody listens on is broken with the connection error; the other servers work", async () => {
    server = await startHttpServer();
    h = sourceHarness({ servers: { gone: { type: "http", url: "http://127.0.0.1:1/mcp" }, remote: { type: "http", url: server.url } } });
    expect((await h.tools()).map((t) => t.name)).toContain("mcp__remote__add");
    expect(h.source.broken()).toEqual([{ scope: "mcp", server: "gone", reason: expect.stringMatching(/^MCP server "gone": could not connect: .*(ECONNREFUSED|fetch failed)/) }]);
  });
});
