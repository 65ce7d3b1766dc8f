import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { RegisteredTool } from "../../tools/types.js";
import { MCP_SERVER_NAME } from "./tool-plan.js";

export type { CallToolResult };

/** Answers one call of a wrapped tool; `toolUseId` is the model's tool_use id when the CLI sends it. */
export type ToolCallHandler = (name: string, args: Record<string, unknown>, toolUseId: string | undefined) => Promise<CallToolResult>;

/**
 * The in-process MCP server `veil`. A low-level server rather than the SDK's
 * `createSdkMcpServer`, because Veil's schemas are JSON Schema already (the SDK's
 * helper wants zod shapes); the SDK only needs an object with `connect(transport)`.
 * Every tool is marked always-loaded so the model sees full schemas on turn one.
 */
export function createVeilMcpServer(tools: readonly RegisteredTool[], onCall: ToolCallHandler): Server {
  const server = new Server({ name: MCP_SERVER_NAME, version: "1.0.0" }, { capabilities: { tools: {} } });
  const listed = tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: { type: "object" as const, ...(tool.modelSchema ?? tool.inputSchema) },
    annotations: { readOnlyHint: tool.readOnly },
    _meta: { "anthropic/alwaysLoad": true },
  }));
  const names = new Set(tools.map((t) => t.name));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args, _meta } = request.params;
    if (!names.has(name)) return { content: [{ type: "text", text: `Error: TOOL_NOT_FOUND — no tool named "${name}"` }], isError: true };
    const toolUseId = typeof _meta?.["claudecode/toolUseId"] === "string" ? (_meta["claudecode/toolUseId"] as string) : undefined;
    return onCall(name, args ?? {}, toolUseId);
  });
  return server;
}
