import { spawn } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tmpWorkspace, type TempWorkspace } from "../helpers/workspace.js";
import { sourceHarness } from "../tools/mcp/helpers.js";

const MAIN = fileURLToPath(new URL("../../dist/src/main.js", import.meta.url));

let ws: TempWorkspace;
let client: Client | undefined;
let transport: StdioClientTransport | undefined;
beforeEach(() => {
  ws = tmpWorkspace();
  mkdirSync(ws.path("home"), { recursive: true });
});
afterEach(async () => {
  await client?.close();
  client = undefined;
  ws.cleanup();
});

/** `veil mcp` driven by the SDK's own client over stdio. */
async function connect(...args: string[]): Promise<Client> {
  transport = new StdioClientTransport({ command: process.execPath, args: [MAIN, "mcp", "--workspace", ws.root, ...args], env: { PATH: process.env.PATH ?? "", VEIL_HOME: ws.path("home") }, stderr: "pipe" });
  client = new Client({ name: "veil-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const text = (result: unknown) => ((result as { content: { type: string; text?: string }[] }).content.find((c) => c.type === "text")?.text ?? "");

describe("veil mcp", { timeout: 30_000 }, () => {
  it("serves the default agent's built-in tools, without the tier tools", async () => {
    const c = await connect();
    expect(c.getServerVersion()).toMatchObject({ name: "veil" });
    const { tools } = await c.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["bash", "read_file", "write_file", "edit_file", "grep", "glob", "list_dir", "todo_write"]));
    expect(names).not.toContain("tool_search");
    expect(names).not.toContain("tool_activate");
    expect(tools.find((t) => t.name === "read_file")).toMatchObject({ inputSchema: { type: "object", properties: { file: expect.any(Object) } }, annotations: { readOnlyHint: true } });
  });

  it("runs tools in the workspace with a persistent shell and the file tools' rules", async () => {
    const c = await connect();
    expect(text(await c.callTool({ name: "bash", arguments: { command: "mkdir -p sub && cd sub && echo started" } }))).toContain("started");
    expect(text(await c.callTool({ name: "bash", arguments: { command: "pwd" } }))).toContain(join(ws.root, "sub"));
    const written = await c.callTool({ name: "write_file", arguments: { file: ws.path("note.txt"), content: "hello from mcp\n" } });
    expect(written.isError).toBeFalsy();
    expect(readFileSync(ws.path("note.txt"), "utf8")).toBe("hello from mcp\n");
    expect(text(await c.callTool({ name: "read_file", arguments: { file: ws.path("note.txt") } }))).toContain("hello from mcp");
    const invalid = await c.callTool({ name: "read_file", arguments: {} });
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toMatch(/^Error: VALIDATION_ERROR — missing required field "file"/);
  });

  it("applies the agent's permissions: disallowed tools are not listed and refuse calls", async () => {
    ws.write(".veil/agents/reader/agent.json", JSON.stringify({ name: "reader", modes: { chat: { tools: ["read_file", "grep", "bash"], disallowedTools: ["bash"] } } }));
    const c = await connect("--agent", "reader");
    expect((await c.listTools()).tools.map((t) => t.name).sort()).toEqual(["grep", "read_file"]);
    const refused = await c.callTool({ name: "bash", arguments: { command: "echo no" } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toBe('Error: PERMISSION_DENIED — tool "bash" is not served to agent "reader"');
    expect(text(await c.callTool({ name: "nope", arguments: {} }))).toBe('Error: TOOL_NOT_FOUND — tool "nope" is not served to agent "reader"');
  });

  it("works as an MCP server of another Veil: mcp__veil__bash runs in the served workspace", async () => {
    const other = sourceHarness({ servers: { veil: { command: process.execPath, args: [MAIN, "mcp", "--workspace", ws.root], env: { VEIL_HOME: ws.path("home") } } } });
    try {
      const names = (await other.tools()).map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["mcp__veil__bash", "mcp__veil__read_file"]));
      expect((await other.call("mcp__veil__bash", { command: "pwd" })).output).toContain(ws.root);
    } finally {
      await other.close();
    }
  });

  it("exits 0 when the client closes stdin", async () => {
    const child = spawn(process.execPath, [MAIN, "mcp", "--workspace", ws.root], { env: { ...process.env, VEIL_HOME: ws.path("home") }, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } } }) + "\n");
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(0);
    expect(JSON.parse(stdout.split("\n")[0]!)).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "veil" } } });
  });

  it("--help prints the usage; an unknown agent exits 1 naming it", async () => {
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [MAIN, "mcp", ...args], { env: { ...process.env, VEIL_HOME: ws.path("home") }, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        child.on("exit", (code) => resolve({ code, stdout, stderr }));
      });
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("veil mcp [--workspace DIR] [--agent NAME]");
    const unknown = await run(["--workspace", ws.root, "--agent", "ghost"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no agent named "ghost"');
  });
});
