import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { systemClock } from "../src/base/clock.js";
import { memoryLogger } from "../src/base/log.js";
import { builtinDefaultAgent } from "../src/config/defaults.js";
import { HookRunner } from "../src/core/hooks.js";
import { Resources } from "../src/core/resources.js";
import { createRuntime } from "../src/runtime.js";
import { createMcpToolSource } from "../src/tools/mcp/source.js";
import { SUMMARY_BUDGET_BYTES } from "../src/tools/registry.js";
import { benchConfig } from "./context.js";
import { captureServer } from "./tools.js";
import { median, withBaseline, type BenchResult } from "./types.js";

const TEST_SERVER = fileURLToPath(new URL("../../test/tools/mcp/fixtures/test-server.mjs", import.meta.url));
const CALLS = 300;
const HOOK_CALLS = 50;
const SERVERS = 10;
const TOOLS_PER_SERVER = 20;

/**
 * MCP and hooks: a warm MCP tool call through Veil vs the same call through the
 * SDK's own client, the first request's size with 10 servers × 20 tools vs none,
 * and what one PreToolUse hook adds to a tool call.
 */
export async function run(): Promise<BenchResult[]> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "veil-bench-mcp-")));
  try {
    return [...(await callOverhead(root)), ...(await requestSizes(root)), ...(await hookOverhead(root))];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function callOverhead(root: string): Promise<BenchResult[]> {
  const workspace = join(root, "calls");
  mkdirSync(workspace, { recursive: true });
  const config = benchConfig(workspace, { mcpServers: { t: { command: process.execPath, args: [TEST_SERVER] } } });
  const resources = new Resources();
  const source = createMcpToolSource({ config, log: memoryLogger(), clock: systemClock, resources, env: process.env });
  const direct = new Client({ name: "bench", version: "0" });
  await direct.connect(new StdioClientTransport({ command: process.execPath, args: [TEST_SERVER], stderr: "ignore" }));
  try {
    const echo = (await source.discover(builtinDefaultAgent())).find((t) => t.name === "mcp__t__echo")!;
    const ctx = { signal: new AbortController().signal } as never;
    const veil: number[] = [];
    const sdk: number[] = [];
    for (let i = 0; i < CALLS + 20; i++) {
      let t = performance.now();
      const input = { message: `m${i}` };
      if (echo.validate(input) !== null) throw new Error("invalid input");
      await echo.execute(input, ctx);
      const veilMs = performance.now() - t;
      t = performance.now();
      await direct.callTool({ name: "echo", arguments: { message: `m${i}` } });
      const sdkMs = performance.now() - t;
      if (i >= 20) {
        veil.push(veilMs);
        sdk.push(sdkMs);
      }
    }
    const veilMedian = median(veil);
    const sdkMedian = median(sdk);
    return [
      withBaseline({ name: "warm MCP tool call through Veil (validate + call + map)", value: veilMedian, unit: "ms", baseline: { name: "SDK client callTool, same server", value: sdkMedian }, note: `overhead ${(veilMedian - sdkMedian).toFixed(3)} ms`, target: "overhead ≤ 1 ms" }),
    ];
  } finally {
    await direct.close();
    await resources.dispose();
  }
}

async function requestSizes(root: string): Promise<BenchResult[]> {
  const capture = await captureServer();
  const measured: { servers: number; bytes: number; tools: number; toolsBytes: number; summaryBytes: number }[] = [];
  try {
    for (const servers of [0, SERVERS]) {
      const workspace = join(root, `req-${servers}`);
      const home = join(workspace, ".veil-home");
      mkdirSync(join(workspace, ".veil"), { recursive: true });
      mkdirSync(home, { recursive: true });
      const mcpServers = Object.fromEntries(Array.from({ length: servers }, (_, i) => [`srv${i}`, { command: process.execPath, args: [TEST_SERVER, `many:${TOOLS_PER_SERVER}`] }]));
      writeFileSync(join(workspace, ".veil", "settings.json"), JSON.stringify({ mcpServers }));
      const runtime = await createRuntime({ workspace, env: { VEIL_BASE_URL: capture.url, VEIL_API_KEY: "x", VEIL_MODEL: "bench-model", VEIL_HOME: home }, log: memoryLogger() });
      try {
        const session = await runtime.sessions.create({ agent: "default" });
        const before = capture.bodies.length;
        await (await runtime.sessions.send(session.id, "hi")).result;
        const body = JSON.parse(capture.bodies[before]!) as { tools?: unknown[]; messages: { role: string; content: string }[] };
        const system = body.messages.find((m) => m.role === "system")?.content ?? "";
        const summaryAt = system.indexOf("## Custom tools");
        measured.push({
          servers,
          bytes: Buffer.byteLength(capture.bodies[before]!),
          tools: body.tools?.length ?? 0,
          toolsBytes: Buffer.byteLength(JSON.stringify(body.tools ?? [])),
          summaryBytes: summaryAt < 0 ? 0 : Buffer.byteLength(system.slice(summaryAt)),
        });
      } finally {
        await runtime.close();
      }
    }
  } finally {
    await new Promise<void>((resolve) => capture.server.close(() => resolve()));
  }
  const [none, many] = measured as [(typeof measured)[0], (typeof measured)[0]];
  const same = none.tools === many.tools && none.toolsBytes === many.toolsBytes;
  return [
    withBaseline({
      name: `first request body, ${SERVERS} MCP servers × ${TOOLS_PER_SERVER} tools`,
      value: many.bytes,
      unit: "bytes",
      baseline: { name: "no MCP server", value: none.bytes },
      note: `tools[] ${same ? "unchanged" : "CHANGED"} (${many.tools} entries / ${many.toolsBytes} bytes); tier-2 summary ${many.summaryBytes} bytes (budget ${SUMMARY_BUDGET_BYTES})`,
      target: `tools[] unchanged, summary < ${SUMMARY_BUDGET_BYTES} bytes`,
    }),
  ];
}

async function hookOverhead(root: string): Promise<BenchResult[]> {
  const workspace = join(root, "hooks");
  mkdirSync(workspace, { recursive: true });
  const make = (command: string | null) =>
    new HookRunner({ hooks: command ? { PreToolUse: [{ matcher: "bash", hooks: [{ type: "command", command }] }] } : {}, workspace, clock: systemClock, log: memoryLogger(), emit: () => undefined });
  const none = make(null);
  const one = make("true");
  const reading = make("cat > /dev/null");
  const time = async (runner: HookRunner) => {
    const samples: number[] = [];
    for (let i = 0; i < HOOK_CALLS; i++) {
      const t = performance.now();
      await runner.preToolUse({ sessionId: "bench", toolName: "bash", toolInput: { command: "ls" } });
      samples.push(performance.now() - t);
    }
    return median(samples);
  };
  const baseline = await time(none);
  return [
    withBaseline({ name: "PreToolUse with one hook (`true`), per tool call", value: await time(one), unit: "ms", baseline: { name: "no hooks", value: baseline } }),
    withBaseline({ name: "PreToolUse with one hook reading stdin (`cat`), per tool call", value: await time(reading), unit: "ms", baseline: { name: "no hooks", value: baseline } }),
  ];
}
