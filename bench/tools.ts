import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { builtinDefaultAgent, defaultSettings } from "../src/config/defaults.js";
import type { VeilConfig } from "../src/config/types.js";
import { memoryLogger } from "../src/base/log.js";
import { Resources } from "../src/core/resources.js";
import { createRuntime } from "../src/runtime.js";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { createCustomToolSource } from "../src/tools/custom/source.js";
import { median, withBaseline, type BenchResult } from "./types.js";
import { benchToolContext } from "./context.js";

const TOOL_COUNTS = [0, 100, 1000];
const DISCOVERY_RUNS = 5;
const CALLS = 300;

/**
 * Custom-tool scaling and cost: the first request's size with 0/100/1000 tools
 * installed (tools[] must stay the same; only the tier-2 summary grows), discovery
 * of 1000 folders (cold, warm), and a warm isolated call vs an in-process call.
 */
export async function run(): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  const root = realpathSync(mkdtempSync(join(tmpdir(), "veil-bench-tools-")));
  try {
    results.push(...(await requestSizes(root)));
    results.push(...(await discoveryTimes(root)));
    results.push(...(await callOverhead(root)));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return results;
}

function installTools(toolsDir: string, count: number): void {
  for (let i = 0; i < count; i++) {
    const name = `bench_tool_${String(i).padStart(4, "0")}`;
    const folder = join(toolsDir, name);
    mkdirSync(folder, { recursive: true });
    writeFileSync(
      join(folder, "tool.json"),
      JSON.stringify({
        name,
        description: `Benchmark tool number ${i}: transforms a message.`,
        input_schema: { type: "object", properties: { message: { type: "string", description: "Input value" }, count: { type: "integer", description: "Repeat count" } }, required: ["message"] },
        timeout: 10,
      }),
    );
    writeFileSync(join(folder, "index.js"), "'use strict';\nmodule.exports = async function execute({ message }) { return String(message).toUpperCase(); };\n");
  }
}

/** A one-shot OpenAI-compatible endpoint that records request bodies and answers "ok". */
export async function captureServer(): Promise<{ server: Server; url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      bodies.push(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = { id: "c1", object: "chat.completion.chunk", created: 0, model: "bench", choices: [{ index: 0, delta: { role: "assistant", content: "ok" }, finish_reason: "stop" }] };
      res.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, bodies };
}

async function requestSizes(root: string): Promise<BenchResult[]> {
  const capture = await captureServer();
  const measured: { count: number; bytes: number; tools: number; toolsBytes: number }[] = [];
  try {
    for (const count of TOOL_COUNTS) {
      const workspace = join(root, `req-${count}`);
      const home = join(workspace, ".veil-home");
      mkdirSync(home, { recursive: true });
      installTools(join(workspace, ".veil", "tools"), count);
      const runtime = await createRuntime({ workspace, env: { VEIL_BASE_URL: capture.url, VEIL_API_KEY: "x", VEIL_MODEL: "bench-model", VEIL_HOME: home }, log: memoryLogger() });
      try {
        const session = await runtime.sessions.create({ agent: "default" });
        const before = capture.bodies.length;
        await (await runtime.sessions.send(session.id, "hi")).result;
        const body = capture.bodies[before]!;
        const tools = (JSON.parse(body) as { tools?: unknown[] }).tools ?? [];
        measured.push({ count, bytes: Buffer.byteLength(body), tools: tools.length, toolsBytes: Buffer.byteLength(JSON.stringify(tools)) });
      } finally {
        await runtime.close();
      }
    }
  } finally {
    await new Promise<void>((resolve) => capture.server.close(() => resolve()));
  }
  const base = measured[0]!;
  const out: BenchResult[] = [];
  for (const m of measured) {
    out.push(
      withBaseline({
        name: `first request body, ${m.count} custom tools`,
        value: m.bytes,
        unit: "bytes",
        baseline: { name: "0 custom tools", value: base.bytes },
        note: `tools[] ${m.tools} entries / ${m.toolsBytes} bytes (0 tools: ${base.tools} / ${base.toolsBytes}); growth ${m.bytes - base.bytes} bytes = tier-2 summary, ${m.count ? ((m.bytes - base.bytes) / m.count).toFixed(1) : "0"} bytes per tool`,
      }),
    );
  }
  return out;
}

async function discoveryTimes(root: string): Promise<BenchResult[]> {
  const workspace = join(root, "discovery");
  installTools(join(workspace, ".veil", "tools"), 1000);
  const config = benchConfig(workspace);
  const agent = builtinDefaultAgent();
  const cold: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < DISCOVERY_RUNS; i++) {
    const resources = new Resources();
    const source = createCustomToolSource({ config, log: memoryLogger(), resources, warmProcesses: 0 });
    let t = performance.now();
    await source.discover(agent);
    cold.push(performance.now() - t);
    t = performance.now();
    await source.discover(agent);
    warm.push(performance.now() - t);
    await resources.dispose();
  }
  const warmMedian = median(warm);
  return [
    { name: "discovery of 1000 tool folders, cold (parse + schema check)", value: median(cold), unit: "ms", target: "< 200 ms" },
    withBaseline({ name: "discovery of 1000 tool folders, warm (stat only)", value: warmMedian, unit: "ms", baseline: { name: "cold", value: median(cold) }, target: "< 200 ms" }),
  ];
}

async function callOverhead(root: string): Promise<BenchResult[]> {
  const workspace = join(root, "calls");
  installTools(join(workspace, ".veil", "tools"), 1);
  const config = benchConfig(workspace);
  const store = SqliteStore.open(join(workspace, ".veil", "veil.db"));
  const resources = new Resources();
  const session = new Resources();
  try {
    const source = createCustomToolSource({ config, log: memoryLogger(), resources });
    const [tool] = await source.discover(builtinDefaultAgent());
    const ctx = benchToolContext(config, store, resources, session);
    const inProcess = async (input: { message: string }) => String(input.message).toUpperCase();
    await tool!.execute({ message: "warm up" }, ctx);
    const isolated: number[] = [];
    const local: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      let t = performance.now();
      await tool!.execute({ message: `call ${i}` }, ctx);
      isolated.push(performance.now() - t);
      t = performance.now();
      await inProcess({ message: `call ${i}` });
      local.push(performance.now() - t);
    }
    return [
      withBaseline({
        name: "custom tool call, warm child process (median)",
        value: median(isolated),
        unit: "ms",
        baseline: { name: "same function in-process", value: median(local) },
        target: "< 5 ms",
        note: `p95 ${percentile(isolated, 0.95).toFixed(2)} ms over ${CALLS} calls`,
      }),
    ];
  } finally {
    await resources.dispose();
    await session.dispose();
    await store.close();
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function benchConfig(workspace: string): VeilConfig {
  const agent = builtinDefaultAgent();
  const projectDir = join(workspace, ".veil");
  mkdirSync(projectDir, { recursive: true });
  return {
    paths: { workspace, projectDir, homeDir: join(workspace, ".veil-home"), dbPath: join(projectDir, "veil.db"), secretPath: join(projectDir, "secret"), memoryDir: join(projectDir, "memory") },
    settings: defaultSettings(),
    models: {},
    agents: { [agent.name]: agent },
    env: {},
  };
}

