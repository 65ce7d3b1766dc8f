/**
 * Custom-tool processes inside the sandbox, with the real bubblewrap: the same guarantees
 * as bash (bash-sandbox.test.ts), checked from a tool's own code (fs, process, child_process)
 * and through the shell a tool may start.
 */
import { existsSync, readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { memoryLogger } from "../../../src/base/log.js";
import { createCustomToolSource, type FolderToolSource } from "../../../src/tools/custom/source.js";
import { detectSandbox, SANDBOX_SUPPORT_KEY, SandboxProbe } from "../../../src/tools/shared/sandbox/probe.js";
import type { RegisteredTool } from "../../../src/tools/types.js";
import { sandboxHarness, sandboxUnavailable, SECRETS, type SandboxHarness } from "../../helpers/sandbox.js";
import { ensureBuiltRunner } from "./built-runner.js";
import { writeTool } from "./tool-folders.js";

let h: SandboxHarness;
let source: FolderToolSource;
afterEach(async () => {
  await h?.close();
});

// A machine without a working bwrap skips these (CI fails, saying why).
const noSandbox = sandboxUnavailable();

beforeAll(async () => {
  if (!noSandbox) await ensureBuiltRunner();
});

const leaked = (text: string) => Object.values(SECRETS).filter((secret) => text.includes(secret));

/** Tools that probe from inside: a shell command, file reads, a write, the environment, an HTTP request to an address. */
function writeProbeTools(dir: string): void {
  writeTool(dir, {
    name: "sh",
    timeout: 20,
    properties: { command: { type: "string" } },
    body: "try { return require('child_process').execSync(input.command, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }); } catch (e) { return 'failed: ' + e.status + ' ' + e.stderr + e.stdout; }",
  });
  writeTool(dir, {
    name: "read",
    properties: { paths: { type: "array", items: { type: "string" } } },
    body: "const fs = require('fs'); const out = {}; for (const p of input.paths) { try { out[p] = fs.readFileSync(p, 'utf8'); } catch (e) { out[p] = e.code; } } return JSON.stringify(out);",
  });
  writeTool(dir, {
    name: "write",
    properties: { path: { type: "string" } },
    body: "try { require('fs').writeFileSync(input.path, 'x'); return 'written'; } catch (e) { return e.code; }",
  });
  writeTool(dir, { name: "env", body: "return JSON.stringify({ env: process.env, pid: process.pid, ppid: process.ppid, procs: require('fs').readdirSync('/proc').filter((e) => /^\\d+$/.test(e)) });" });
  writeTool(dir, {
    name: "http",
    timeout: 20,
    properties: { host: { type: "string" }, port: { type: "number" }, path: { type: "string" }, hostHeader: { type: "string" } },
    body: `return await new Promise((resolve) => {
      const req = require('http').get({ host: input.host, port: input.port, path: input.path, headers: input.hostHeader ? { host: input.hostHeader } : {} }, (res) => {
        let body = ''; res.on('data', (d) => (body += d)); res.on('end', () => resolve(res.statusCode + ' ' + body.trim()));
      });
      req.on('error', (e) => resolve('error ' + e.code));
    });`,
  });
  writeTool(dir, { name: "hangs", timeout: 1, body: "await new Promise(() => {});" });
}

async function setUp(options: Parameters<typeof sandboxHarness>[0] = {}): Promise<Map<string, RegisteredTool>> {
  h = await sandboxHarness(options);
  writeProbeTools(h.ws.path(".veil", "tools"));
  const ctx = h.ctx();
  source = createCustomToolSource({ config: h.config, log: memoryLogger(), resources: h.runtimeResources, services: {} });
  return new Map((await source.discover(ctx.agent)).map((tool) => [tool.name, tool]));
}

describe.skipIf(noSandbox)("custom tools in the sandbox", { timeout: 60_000 }, () => {
  it("write the workspace and writeRoots only, and see none of the runtime's secrets", async () => {
    const tools = await setUp();
    const write = (path: string) => h.call(tools.get("write")!, { path });
    expect((await write(h.ws.path("from-tool.txt"))).output).toBe("written");
    expect(readFileSync(h.ws.path("from-tool.txt"), "utf8")).toBe("x");
    expect((await write(join(h.dirs.writeRoot, "t.txt"))).output).toBe("written");
    expect((await write(join(h.dirs.outside, "t.txt"))).output).toBe("EROFS");
    expect((await write(h.ws.path(".veil/secret"))).output).toBe("EROFS");
    expect(existsSync(join(h.dirs.outside, "t.txt"))).toBe(false);

    const paths = [".veil/secret", ".veil/settings.json", ".veil/keys.json", ".veil/veil.db", join(h.dirs.denied, "denied.txt"), join(h.dirs.veilHome, "settings.json"), h.ws.path("sub/../.veil/secret")];
    const read = JSON.parse((await h.call(tools.get("read")!, { paths })).output) as Record<string, string>;
    expect(leaked(JSON.stringify(read))).toEqual([]);
    expect(read[".veil/secret"]).toBe("");
    expect(read[".veil/veil.db"]).toBe("");
    expect(read[join(h.dirs.denied, "denied.txt")]).toBe("ENOENT");
  });

  it("get only envPass, the agent's env and a private $HOME, and see only their own processes", async () => {
    const tools = await setUp();
    const seen = JSON.parse((await h.call(tools.get("env")!, {})).output) as { env: Record<string, string>; pid: number; ppid: number; procs: string[] };
    expect(leaked(JSON.stringify(seen.env))).toEqual([]);
    expect(seen.env.AGENT_VAR).toBe("from-agent");
    expect(seen.env.HOME).not.toBe(h.dirs.home);
    expect(Object.keys(seen.env).filter((name) => !/^(PATH|LANG|LANGUAGE|LC_ALL|LC_CTYPE|TERM|TZ|USER|LOGNAME|HOME|PWD|AGENT_VAR|NODE_CHANNEL_FD|NODE_CHANNEL_SERIALIZATION_MODE)$/.test(name))).toEqual([]);
    expect(seen.procs.length).toBeLessThan(6);
    expect(seen.pid).toBeLessThan(10);
    const corpus = await h.call(tools.get("sh")!, {
      command: `cat /proc/${process.pid}/environ; cat /proc/1/environ; cat .veil/secret; unshare -r id; nsenter -t 1 -m true; env; echo done`,
    });
    expect(leaked(corpus.output)).toEqual([]);
    expect(corpus.output).toMatch(/done/);
  });

  it("are killed whole at their timeout", async () => {
    const tools = await setUp();
    const before = source.processIds();
    expect(before).toHaveLength(1);
    const result = await h.call(tools.get("hangs")!, {});
    expect(result.output).toMatch(/^Error: TOOL_TIMEOUT — /);
    for (const pid of before) expect(existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ")).toBe(false);
  });

  it("reach the network only through the allowlist proxy: refused hosts answer 403 with sandbox.blocked", async () => {
    const upstream = createHttpServer((_req, res) => res.end("upstream-ok"));
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const port = (upstream.address() as { port: number }).port;
    try {
      const tools = await setUp({ sandbox: { network: "allowlist", allowHosts: ["127.0.0.1"] } });
      const http = (input: Record<string, unknown>, toolCallId?: string) => h.call(tools.get("http")!, input, toolCallId ? { toolCallId } : {});
      expect((await http({ host: "127.0.0.1", port: 3128, path: `http://127.0.0.1:${port}/` })).output).toBe("200 upstream-ok");
      expect((await http({ host: "127.0.0.1", port, path: "/" })).output).toBe("error ECONNREFUSED");
      expect((await http({ host: "127.0.0.1", port: 3128, path: "http://blocked.test:8080/" }, "call_tool_blocked")).output).toMatch(/^403 /);
      await expect.poll(() => h.events.filter((event) => event.type === "sandbox.blocked")).toEqual([expect.objectContaining({ toolCallId: "call_tool_blocked", host: "blocked.test", port: 8080 })]);
      expect((await h.call(tools.get("sh")!, { command: `curl -s http://127.0.0.1:${port}/` })).output).toBe("upstream-ok");
    } finally {
      upstream.close();
    }
  });

  it("refuse to run with sandbox.mode required and no sandbox (SANDBOX_UNAVAILABLE)", async () => {
    h = await sandboxHarness({ sandbox: { mode: "required" } });
    h.runtimeResources.get(SANDBOX_SUPPORT_KEY, () => new SandboxProbe(() => detectSandbox("linux", "/nonexistent"), async () => detectSandbox("linux", "/nonexistent")));
    writeProbeTools(h.ws.path(".veil", "tools"));
    const ctx = h.ctx();
    source = createCustomToolSource({ config: h.config, log: memoryLogger(), resources: h.runtimeResources, services: {} });
    const tools = new Map((await source.discover(ctx.agent)).map((tool) => [tool.name, tool]));
    const result = await h.call(tools.get("write")!, { path: h.ws.path("ran.txt") });
    expect(result.output).toMatch(/^Error: SANDBOX_UNAVAILABLE — sandbox\.mode is "required"/);
    expect(existsSync(h.ws.path("ran.txt"))).toBe(false);
    expect(source.processIds()).toEqual([]);
  });
});
