import { fileURLToPath } from "node:url";
import { systemClock } from "../../../src/base/clock.js";
import { memoryLogger } from "../../../src/base/log.js";
import { defaultSettings } from "../../../src/config/defaults.js";
import type { Settings, VeilConfig } from "../../../src/config/types.js";
import { Resources } from "../../../src/core/resources.js";
import { builtinDefaultAgent } from "../../../src/config/defaults.js";
import { createMcpToolSource, type McpToolSource } from "../../../src/tools/mcp/source.js";
import type { RegisteredTool, ToolOutcome } from "../../../src/tools/types.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";

export const EVERYTHING = fileURLToPath(new URL("../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url));
export const TEST_SERVER = fileURLToPath(new URL("./fixtures/test-server.mjs", import.meta.url));

/** A stdio entry running a node script with this node. */
export const nodeServer = (script: string, ...args: string[]) => ({ command: process.execPath, args: [script, ...args] });

export interface SourceHarness {
  ws: TempWorkspace;
  source: McpToolSource;
  resources: Resources;
  log: ReturnType<typeof memoryLogger>;
  tools(): Promise<RegisteredTool[]>;
  tool(name: string): Promise<RegisteredTool>;
  call(name: string, input?: Record<string, unknown>): Promise<ToolOutcome>;
  close(): Promise<void>;
}

/** The MCP source alone over a temp workspace (optionally with a .mcp.json), with runtime resources to dispose. */
export function sourceHarness(options: { servers?: Record<string, unknown>; mcpJson?: string; settings?: Partial<Settings>; env?: NodeJS.ProcessEnv } = {}): SourceHarness {
  const ws = tmpWorkspace({ files: options.mcpJson === undefined ? {} : { ".mcp.json": options.mcpJson } });
  const settings = { ...defaultSettings(), ...options.settings, ...(options.servers ? { mcpServers: options.servers } : {}) } as Settings;
  const config = { paths: { workspace: ws.root }, settings } as unknown as VeilConfig;
  const resources = new Resources();
  const log = memoryLogger();
  const source = createMcpToolSource({ config, log, clock: systemClock, resources, env: options.env ?? process.env });
  const agent = builtinDefaultAgent();
  const tools = () => source.discover(agent);
  const tool = async (name: string) => {
    const found = (await tools()).find((t) => t.name === name);
    if (!found) throw new Error(`no tool ${name}; have ${(await tools()).map((t) => t.name).join(", ")}; broken: ${JSON.stringify(source.broken())}`);
    return found;
  };
  return {
    ws,
    source,
    resources,
    log,
    tools,
    tool,
    async call(name, input = {}) {
      const t = await tool(name);
      const problem = t.validate(input);
      if (problem) throw new Error(problem);
      const result = await t.execute(input, { signal: new AbortController().signal } as never);
      return typeof result === "string" ? { output: result } : result;
    },
    async close() {
      await resources.dispose();
      ws.cleanup();
    },
  };
}
