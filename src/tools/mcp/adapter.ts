import { formatToolError } from "../format.js";
import { touchesFromFields, touchesProblem } from "../declared-touches.js";
import type { Attachment, Logger, RegisteredTool, ToolOutcome } from "../types.js";
import { sharedValidators } from "../../base/validation.js";
import type { CallToolResult } from "./connection.js";
import type { McpServerHandle } from "./server-handle.js";

/** OpenAI-compatible function names are at most 64 characters. */
const MAX_NAME_LENGTH = 64;
/** Slack over the per-call timeout for the executor's watchdog: the server's own timeout answers first. */
const WATCHDOG_SLACK_MS = 2_000;

export interface McpToolProblem {
  server: string;
  tool: string | null;
  reason: string;
}

/** `mcp__<server>__<tool>`, with characters a function name may not hold replaced by "_". */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${safe(server)}__${safe(tool)}`;
}

/** The prefix that `mcp__<server>__*` in permissions stands for. */
export function mcpServerPrefix(server: string): string {
  return `mcp__${safe(server)}__`;
}

function safe(part: string): string {
  return part.replace(/[^A-Za-z0-9_-]/g, "_");
}

/**
 * Turns one server's tools/list answer into Veil custom tools. A tool with a bad
 * name or schema is skipped and reported; the others stay usable.
 */
export function adaptServerTools(handle: McpServerHandle, rawTools: readonly unknown[], checkSchema: (schema: Record<string, unknown>) => string | null, log: Logger): { tools: RegisteredTool[]; problems: McpToolProblem[] } {
  const server = handle.spec.name;
  const tools: RegisteredTool[] = [];
  const problems: McpToolProblem[] = [];
  const seen = new Set<string>();
  for (const raw of rawTools) {
    const entry = raw as { name?: unknown; title?: unknown; description?: unknown; inputSchema?: unknown; annotations?: { readOnlyHint?: unknown } };
    if (typeof entry?.name !== "string" || entry.name === "") {
      problems.push({ server, tool: null, reason: `MCP server "${server}" listed a tool without a name` });
      continue;
    }
    const toolName = entry.name;
    const fail = (reason: string) => problems.push({ server, tool: toolName, reason: `MCP server "${server}", tool "${toolName}": ${reason}` });
    const name = mcpToolName(server, toolName);
    if (name.length > MAX_NAME_LENGTH) {
      fail(`the full name "${name}" is longer than ${MAX_NAME_LENGTH} characters, which models refuse; use a shorter server name`);
      continue;
    }
    if (seen.has(name)) {
      fail(`another tool of this server maps to the same name "${name}"`);
      continue;
    }
    if (typeof entry.inputSchema !== "object" || entry.inputSchema === null || Array.isArray(entry.inputSchema)) {
      fail("inputSchema is missing or not an object");
      continue;
    }
    const schema = entry.inputSchema as Record<string, unknown>;
    if (schema.type !== undefined && schema.type !== "object") {
      fail(`inputSchema.type must be "object", got ${JSON.stringify(schema.type)}`);
      continue;
    }
    const inputSchema = { ...schema, type: "object" };
    const problem = checkSchema(inputSchema);
    if (problem) {
      fail(`inputSchema is not a valid JSON Schema: ${problem}`);
      continue;
    }
    const fields = handle.spec.touches?.[toolName];
    const touchesWrong = fields ? touchesProblem(fields, schema.properties as Record<string, unknown> | undefined) : null;
    if (touchesWrong) {
      fail(`the server entry's ${touchesWrong}`);
      continue;
    }
    seen.add(name);
    const description = typeof entry.description === "string" && entry.description.trim() ? entry.description : typeof entry.title === "string" ? entry.title : `Tool "${toolName}" of MCP server "${server}".`;
    tools.push(buildTool(handle, { name, toolName, description, inputSchema, readOnly: entry.annotations?.readOnlyHint === true, touches: fields ?? [] }, log));
  }
  return { tools, problems };
}

function buildTool(handle: McpServerHandle, info: { name: string; toolName: string; description: string; inputSchema: Record<string, unknown>; readOnly: boolean; touches: string[] }, log: Logger): RegisteredTool {
  let validator: ((input: unknown) => string | null) | null = null;
  const server = handle.spec.name;
  return {
    name: info.name,
    description: info.description,
    inputSchema: info.inputSchema,
    timeoutMs: handle.spec.callTimeoutMs + WATCHDOG_SLACK_MS,
    readOnly: info.readOnly,
    tier: "custom",
    source: { scope: "mcp", server, tool: info.toolName },
    ...(info.touches.length > 0 ? { touches: touchesFromFields(info.touches) } : {}),
    validate(input) {
      if (!validator) {
        try {
          validator = sharedValidators.compile(info.inputSchema);
        } catch (error) {
          const message = `MCP tool "${info.name}" has an inputSchema AJV cannot compile (${(error as Error).message}); the server "${server}" must fix it`;
          log.warn(message, { server });
          return message;
        }
      }
      return validator(input);
    },
    async execute(input, ctx) {
      // Sent as the model wrote it: MCP tools get no injected `_` fields, so `_`-names are the server's own (prototype keys were dropped by the executor).
      const result = await handle.call(info.toolName, input, ctx.signal);
      return mapCallResult(result, server, info.toolName);
    },
  };
}

/** MCP content → Veil outcome: text joined, images and audio as attachments, isError as an error result. */
export function mapCallResult(result: CallToolResult, server: string, tool: string): ToolOutcome {
  const texts: string[] = [];
  const attachments: Attachment[] = [];
  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text":
        texts.push(block.text);
        break;
      case "image":
      case "audio":
        attachments.push({ type: block.type, media_type: block.mimeType, data: block.data });
        texts.push(`[${block.type} ${block.mimeType} attached]`);
        break;
      case "resource": {
        const resource = block.resource as { uri: string; mimeType?: string; text?: string; blob?: string };
        texts.push(typeof resource.text === "string" ? resource.text : `[resource ${resource.uri}${resource.mimeType ? ` (${resource.mimeType})` : ""}, ${resource.blob?.length ?? 0} bytes of base64 not shown]`);
        break;
      }
      case "resource_link":
        texts.push(`[resource link: ${block.name} ${block.uri}${block.description ? ` — ${block.description}` : ""}]`);
        break;
      default:
        texts.push(JSON.stringify(block));
    }
  }
  if (texts.length === 0 && result.structuredContent !== undefined) texts.push(JSON.stringify(result.structuredContent));
  const text = texts.join("\n") || "(no output)";
  const details: Record<string, unknown> = { server, tool, ...(result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}) };
  if (result.isError) return { output: formatToolError("TOOL_ERROR", `MCP tool "${tool}" of server "${server}" reported an error: ${text}`), isError: true, details };
  return { output: text, ...(attachments.length ? { attachments } : {}), details };
}
