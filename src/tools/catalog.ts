import type { AgentConfig } from "../config/types.js";
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

/** The one public shape of a tool listing: `GET /tools` and `veil tools --json` alike. */
export function publicToolList(catalog: ToolCatalog): (ToolListing | BrokenToolListing)[] {
  return [...catalog.tools, ...catalog.broken.map(brokenListing)];
}
