import { parseArgs } from "node:util";
import type { Readable, Writable } from "node:stream";
import { createLogger } from "../base/log.js";
import type { AgentConfig } from "../config/types.js";
import { Resources } from "../core/resources.js";
import { modelInfo, pickModelKey } from "../llm/models.js";
import { createRuntime, type Runtime } from "../runtime.js";
import { ExternalToolCalls } from "../core/external-calls.js";
import { SessionWriter } from "../core/session-writer.js";
import { buildToolContext, type ToolTurn } from "../core/tool-context.js";
import { formatToolError } from "../tools/format.js";
import { isToolAllowed, modeConfig } from "../tools/permissions.js";
import { SessionToolset } from "../tools/registry.js";
import type { RegisteredTool, ToolOutcome } from "../tools/types.js";
import { VERSION } from "../version.js";
import type { CliIo } from "./run.js";

export const MCP_USAGE = `veil mcp [--workspace DIR] [--agent NAME]

Serves the agent's built-in tools (its permissions applied; default agent "default")
as an MCP server over stdio. Example client entry (.mcp.json):
  { "mcpServers": { "veil": { "command": "npx", "args": ["veil", "mcp", "--workspace", "/path/to/project"] } } }
`;

/** The tiers need a session toolset, which an outside MCP client does not drive: these stay out. */
const TIER_TOOLS = new Set(["tool_search", "tool_activate"]);
const MODE = "chat";

export interface McpStdio {
  stdin: Readable;
  stdout: Writable;
}

/** `veil mcp`: runs until the client closes stdin (or SIGINT/SIGTERM). Returns the exit code. */
export async function mcpCommand(argv: readonly string[], cwd: string, io: CliIo, stdio: McpStdio = { stdin: process.stdin, stdout: process.stdout }): Promise<number> {
  let values: { workspace?: string; agent?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ args: [...argv], options: { workspace: { type: "string" }, agent: { type: "string" }, help: { type: "boolean", short: "h" } }, strict: true, allowPositionals: false }));
  } catch (error) {
    io.stderr(`${(error as Error).message}\n\n${MCP_USAGE}`);
    return 64;
  }
  if (values.help) {
    io.stdout(MCP_USAGE);
    return 0;
  }
  const runtime = await createRuntime({
    // One session of its own: no other session's timers, inbox or replies (like `veil run`).
    mode: "oneshot",
    workspace: values.workspace ?? cwd,
    env: io.env,
    log: createLogger({ level: (io.env.VEIL_LOG_LEVEL as "warn" | undefined) ?? "warn", write: (line) => io.stderr(line + "\n") }),
    // Built-in tools only: no tool folders, and no MCP servers (which could be this very command).
    customTools: { discover: async () => [] },
  });
  try {
    const agentName = values.agent ?? "default";
    const agent = runtime.agents()[agentName];
    if (!agent) {
      io.stderr(`no agent named "${agentName}" (known: ${Object.keys(runtime.agents()).join(", ")})\n`);
      return 1;
    }
    await serveTools(runtime, agent, stdio);
    return 0;
  } finally {
    await runtime.close();
  }
}

async function serveTools(runtime: Runtime, agent: AgentConfig, stdio: McpStdio): Promise<void> {
  const { Server } = await import("@modelcontextprotocol/sdk/server/index.js");
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const { CallToolRequestSchema, ListToolsRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");

  const mode = modeConfig(agent, MODE);
  const tools = new Map(runtime.builtins.filter((t) => !TIER_TOOLS.has(t.name) && isToolAllowed(mode, t.name)).map((t) => [t.name, t]));
  const session = await runtime.sessions.create({ agent: agent.name, mode: MODE, origin: "mcp", title: `veil mcp (agent ${agent.name})` });
  const sessionResources = new Resources();
  const calls = await externalCalls(runtime, agent, session.id, sessionResources, [...tools.values()]);
  const server = new Server({ name: "veil", version: VERSION }, { capabilities: { tools: {} } });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [...tools.values()].map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema as { type: "object" },
      ...(tool.readOnly ? { annotations: { readOnlyHint: true } } : {}),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    if (!tools.has(name)) {
      const code = runtime.builtins.some((t) => t.name === name) ? "PERMISSION_DENIED" : "TOOL_NOT_FOUND";
      return toMcpResult({ output: formatToolError(code, `tool "${name}" is not served to agent "${agent.name}"`), isError: true });
    }
    const result = await calls.call(name, (request.params.arguments ?? {}) as Record<string, unknown>, extra.signal);
    return toMcpResult({ output: result.output, attachments: result.attachments, isError: !result.success });
  });

  const transport = new StdioServerTransport(stdio.stdin, stdio.stdout);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    stdio.stdin.once("end", () => resolve());
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => undefined);
  await sessionResources.dispose();
  await runtime.sessions.close(session.id).catch(() => undefined);
}

/**
 * The `veil mcp` session's calls go through the run's tool-call path (core/external-calls.ts):
 * its hooks, stored states, progress events and abort grace, and a context built the one way
 * a run builds it.
 */
async function externalCalls(runtime: Runtime, agent: AgentConfig, sessionId: string, sessionResources: Resources, tools: RegisteredTool[]): Promise<ExternalToolCalls> {
  const { config } = runtime;
  const modelKey = modelKeyOf(agent, runtime);
  const writer = new SessionWriter({ sessionId, store: runtime.store, events: runtime.events, ids: runtime.ids, now: () => runtime.clock.now() });
  const toolset = await SessionToolset.create({ builtins: tools, custom: [], agent, mode: MODE, sessionId, store: runtime.store, log: runtime.log, config });
  const turn: ToolTurn = {
    sessionId,
    agent,
    mode: MODE,
    paths: config.paths,
    settings: config.settings,
    modelKey,
    model: modelInfo(modelKey, config.models),
    clock: runtime.clock,
    session: sessionResources,
    runtime: runtime.resources,
    services: runtime.services,
    log: runtime.log,
  };
  return new ExternalToolCalls({
    writer,
    toolset,
    makeContext: (call, signal) => buildToolContext(turn, call, signal, writer.toolWrites(call)),
    clock: runtime.clock,
    log: runtime.log,
    hooks: runtime.hooks,
    newCallId: () => runtime.ids.next("call"),
  });
}

/** The agent's model for tools that ask (agent_spawn…); `veil mcp` itself needs none, so "" when unset. */
function modelKeyOf(agent: AgentConfig, runtime: Runtime): string {
  try {
    return pickModelKey({ agent: agent.model, settings: runtime.config.settings });
  } catch {
    return "";
  }
}

function toMcpResult(outcome: ToolOutcome) {
  const content: ({ type: "text"; text: string } | { type: "image" | "audio"; data: string; mimeType: string })[] = [{ type: "text", text: outcome.output }];
  for (const attachment of outcome.attachments ?? []) {
    if (attachment.data) content.push({ type: attachment.type, data: attachment.data, mimeType: attachment.media_type });
  }
  return { content, ...(outcome.isError ? { isError: true } : {}) };
}
