import { afterEach, describe, expect, it } from "vitest";
import { expandVars, readMcpJson, resolveMcpServers } from "../../../src/tools/mcp/config.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";
import { nodeServer, sourceHarness, TEST_SERVER, type SourceHarness } from "./helpers.js";

let ws: TempWorkspace | undefined;
let h: SourceHarness | undefined;
afterEach(async () => {
  ws?.cleanup();
  ws = undefined;
  await h?.close();
  h = undefined;
});

const resolve = (settingsServers: Record<string, unknown> | undefined, mcpJson?: string, env: Record<string, string> = {}) => {
  ws = tmpWorkspace({ files: mcpJson === undefined ? {} : { ".mcp.json": mcpJson } });
  return resolveMcpServers({ settingsServers, mcpJson: readMcpJson(ws.root), workspace: ws.root, env });
};

describe("MCP server configuration", () => {
  it("reads Claude Code's .mcp.json shape; settings win on the same name", () => {
    const { servers, problems } = resolve(
      { shared: { type: "http", url: "http://127.0.0.1:8931/mcp" } },
      JSON.stringify({ mcpServers: { shared: { command: "from-file" }, local: { command: "npx", args: ["-y", "pkg"], env: { K: "V" } } } }),
    );
    expect(problems).toEqual([]);
    expect(servers.map((s) => [s.name, s.transport.kind, s.origin === "settings" ? "settings" : "file"])).toEqual([
      ["shared", "http", "settings"],
      ["local", "stdio", "file"],
    ]);
    expect(servers[1]!.transport).toEqual({ kind: "stdio", command: "npx", args: ["-y", "pkg"], env: { K: "V" }, cwd: ws!.root });
    expect(servers[1]).toMatchObject({ startupTimeoutMs: 30_000, callTimeoutMs: 120_000 });
  });

  it("expands ${VAR} and ${VAR:-default} like Claude Code", () => {
    expect(expandVars("Bearer ${TOKEN}", { TOKEN: "abc" })).toBe("Bearer abc");
    expect(expandVars("${MISSING:-fallback}/x", {})).toBe("fallback/x");
    const { servers } = resolve({ r: { type: "sse", url: "${BASE}/sse", headers: { Authorization: "Bearer ${TOKEN}" } } }, undefined, { BASE: "http://127.0.0.1:9", TOKEN: "t" });
    expect(servers[0]!.transport).toEqual({ kind: "sse", url: "http://127.0.0.1:9/sse", headers: { Authorization: "Bearer t" } });
  });

  it("a malformed .mcp.json is one problem naming the file; settings servers still load", () => {
    const { servers, problems } = resolve({ ok: { command: "x" } }, "{ mcpServers: nope");
    expect(servers.map((s) => s.name)).toEqual(["ok"]);
    expect(problems).toEqual([{ server: null, file: ws!.path(".mcp.json"), reason: expect.stringMatching(/\.mcp\.json: invalid JSON \(.*\); no server from this file is started$/) }]);
    expect(resolve(undefined, JSON.stringify({ mcpServers: [] })).problems[0]!.reason).toMatch(/"mcpServers" must be an object/);
  });

  it("checks each entry on its own with an error naming the server", () => {
    const { servers, problems } = resolve({
      ws: { type: "websocket", url: "ws://x" },
      nocmd: { args: ["x"] },
      badargs: { command: "x", args: "not-an-array" },
      badurl: { type: "http", url: "ftp://x" },
      badtimeout: { command: "x", callTimeoutSeconds: -1 },
      "bad name": { command: "x" },
      notobj: 42,
      fine: { command: "x" },
    });
    expect(servers.map((s) => s.name)).toEqual(["fine"]);
    expect(problems.map((p) => p.reason)).toEqual([
      'MCP server "ws" (settings.json mcpServers): unknown type "websocket" (use "stdio" with a command, "http" or "sse" with a url)',
      'MCP server "nocmd" (settings.json mcpServers): "command" must be a non-empty string',
      'MCP server "badargs" (settings.json mcpServers): "args" must be an array of strings',
      'MCP server "badurl" (settings.json mcpServers): "url" must be an http(s) URL, got "ftp://x"',
      'MCP server "badtimeout" (settings.json mcpServers): "callTimeoutSeconds" must be a positive number of seconds, got -1',
      'MCP server "bad name" (settings.json mcpServers): the name may hold only letters, digits, "_", "-" and "."',
      'MCP server "notobj" (settings.json mcpServers): the entry must be an object',
    ]);
    expect(problems.every((p) => p.server !== null)).toBe(true);
  });

  it("reads an entry's touches (tool → input fields holding written paths) and refuses any other shape", () => {
    const { servers, problems, unknownKeys } = resolve({ ok: { command: "x", touches: { write: ["file", "dest"] } }, bad: { command: "x", touches: { write: "file" } } });
    expect(servers.map((s) => [s.name, s.touches])).toEqual([["ok", { write: ["file", "dest"] }]]);
    expect(problems).toEqual([{ server: "bad", reason: expect.stringContaining('"touches" must map tool names to lists of input property names') }]);
    expect(unknownKeys).toEqual([]);
  });

  it("an entry with only a url is streamable HTTP", () => {
    expect(resolve({ r: { url: "http://127.0.0.1:1/mcp" } }).servers[0]!.transport.kind).toBe("http");
  });

  it("reports config problems as broken entries and picks up an edited .mcp.json without a restart", async () => {
    h = sourceHarness({ mcpJson: JSON.stringify({ mcpServers: { t: { type: "carrier-pigeon" } } }) });
    expect(await h.tools()).toEqual([]);
    expect(h.source.broken()).toEqual([{ scope: "mcp", server: "t", file: h.ws.path(".mcp.json"), reason: expect.stringContaining('unknown type "carrier-pigeon"') }]);
    h.ws.write(".mcp.json", JSON.stringify({ mcpServers: { t: nodeServer(TEST_SERVER) } }));
    expect((await h.tools()).map((t) => t.name)).toContain("mcp__t__echo");
    expect(h.source.broken()).toEqual([]);
  });
});
