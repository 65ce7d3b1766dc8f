import type { AgentConfig } from "../config/types.js";
import { Type } from "../schema.js";
import { isToolAllowedWithCustom, matchesToolEntry, modeConfig } from "./permissions.js";
import type { BrokenTool, CustomToolSource } from "./registry.js";
import type { RegisteredTool } from "./types.js";
import type { SkillSource } from "./skills/source.js";
import { withSkillTool } from "./skills/skill-tool.js";

export interface ToolListing {
  name: string;
  description: string;
  tier: "builtin" | "custom";
  scope?: "agent" | "project" | "global" | "mcp";
  folder?: string;
  /** For MCP tools: the server's name. */
  server?: string;
  /**
   * always: a built-in in tools[] every call; pre-activated: a custom tool in tools[]
   * from turn one; available: in the tier-2 summary, callable after tool_activate;
   * forbidden: the mode's allowlist / disallowedTools refuses it.
   */
  state: "always" | "pre-activated" | "available" | "forbidden";
  input_schema: Record<string, unknown>;
}

export interface ToolCatalog {
  tools: ToolListing[];
  broken: BrokenTool[];
}

/** Every tool an agent could see in a mode, with its tier and state (GET /tools, `veil tools`). */
export async function describeTools(options: { builtins: readonly RegisteredTool[]; customTools: CustomToolSource; skills?: SkillSource; agent: AgentConfig; mode?: string }): Promise<ToolCatalog> {
  const modeName = options.mode ?? "chat";
  const mode = modeConfig(options.agent, modeName);
  const builtins = withSkillTool(options.builtins, options.skills?.discover(options.agent).skills ?? []);
  const builtinNames = new Set(builtins.map((t) => t.name));
  const custom = (await options.customTools.discover(options.agent)).filter((t) => !builtinNames.has(t.name));
  const customNames = new Set(custom.map((t) => t.name));
  const allowed = (name: string) => isToolAllowedWithCustom(mode, name, customNames);
  const tools: ToolListing[] = [];
  for (const tool of builtins) {
    tools.push({ ...base(tool), state: allowed(tool.name) ? "always" : "forbidden" });
  }
  for (const tool of [...custom].sort((a, b) => a.name.localeCompare(b.name))) {
    const state = !allowed(tool.name) ? "forbidden" : mode.preActivatedTools.some((entry) => matchesToolEntry(entry, tool.name)) ? "pre-activated" : "available";
    tools.push({ ...base(tool), state, ...sourceFields(tool) });
  }
  return { tools, broken: options.customTools.broken?.(options.agent) ?? [] };
}

/** A broken tool folder or MCP server as GET /tools and `veil tools --json` list it. */
export function brokenListing(broken: BrokenTool): BrokenToolListing {
  const where = broken.scope === "mcp" ? { server: broken.server, ...(broken.tool ? { tool: broken.tool } : {}), ...(broken.file ? { file: broken.file } : {}) } : { folder: broken.folder, file: broken.file };
  return { name: null, tier: "custom", state: "broken", scope: broken.scope, ...where, error: broken.reason };
}

function sourceFields(tool: RegisteredTool): Partial<ToolListing> {
  if (!tool.source) return {};
  return tool.source.scope === "mcp" ? { scope: "mcp", server: tool.source.server } : { scope: tool.source.scope, folder: tool.source.folder };
}

function base(tool: RegisteredTool): Omit<ToolListing, "state"> {
  return { name: tool.name, description: tool.description, tier: tool.tier, input_schema: tool.inputSchema };
}

/** A broken tool folder as listed beside the tools, so a user sees why a tool is missing. */
export interface BrokenToolListing {
  name: null;
  tier: "custom";
  state: "broken";
  scope?: string;
  folder?: string;
  /** For MCP: the server (and the tool) that failed. */
  server?: string | null;
  tool?: string;
  file?: string;
  error: string;
}

const SCOPE_DESCRIPTION = "custom tools: agent, project or global (which folder level it came from), or mcp";
const FOLDER_DESCRIPTION = "custom tools: the absolute path of the tool's folder (the one holding tool.json and index.js)";

/** One entry of `GET /tools` (and `veil tools --json`), for the API description. */
export const ToolListingSchema = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    tier: Type.Union([Type.Literal("builtin"), Type.Literal("custom")]),
    state: Type.Union([Type.Literal("always"), Type.Literal("pre-activated"), Type.Literal("available"), Type.Literal("forbidden")]),
    input_schema: Type.Object({}, { additionalProperties: true, description: "the tool's parameters (JSON Schema)" }),
    scope: Type.Optional(Type.Union([Type.Literal("agent"), Type.Literal("project"), Type.Literal("global"), Type.Literal("mcp")], { description: SCOPE_DESCRIPTION })),
    folder: Type.Optional(Type.String({ description: FOLDER_DESCRIPTION })),
    server: Type.Optional(Type.String({ description: "MCP tools: the server's name" })),
  },
  { additionalProperties: false },
);

/** A tool folder or MCP server that could not be loaded, listed beside the tools. */
export const BrokenToolListingSchema = Type.Object(
  {
    name: Type.Null(),
    tier: Type.Literal("custom"),
    state: Type.Literal("broken"),
    scope: Type.Optional(Type.String({ description: SCOPE_DESCRIPTION })),
    folder: Type.Optional(Type.String({ description: FOLDER_DESCRIPTION })),
    server: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: "MCP: the server that failed" })),
    tool: Type.Optional(Type.String({ description: "MCP: the tool that failed" })),
    file: Type.Optional(Type.String({ description: "the file at fault" })),
    error: Type.String(),
  },
  { additionalProperties: false },
);

/** The one public shape of a tool listing: `GET /tools` and `veil tools --json` alike. */
export function publicToolList(catalog: ToolCatalog): (ToolListing | BrokenToolListing)[] {
  return [...catalog.tools, ...catalog.broken.map(brokenListing)];
}
