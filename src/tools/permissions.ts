import type { AgentConfig, ModeConfig } from "../config/types.js";
import { defaultMode } from "../config/defaults.js";

/** Tools an agent gets automatically alongside another (agent_control comes with agent_spawn: a parent can always steer what it spawned). */
const PAIRED: Record<string, string> = { agent_control: "agent_spawn" };

export function modeConfig(agent: AgentConfig, mode: string): ModeConfig {
  return agent.modes[mode] ?? (mode === "chat" ? defaultMode() : { ...defaultMode(), enabled: false });
}

/**
 * Is `name` callable in this mode? `disallowedTools` always wins; an empty
 * `tools` list means every tool; paired tools follow their partner.
 */
export function isToolAllowed(mode: ModeConfig, name: string): boolean {
  if (listNames(mode.disallowedTools, name)) return false;
  if (mode.tools.length === 0) return true;
  if (listNames(mode.tools, name)) return true;
  const partner = PAIRED[name];
  return partner !== undefined && (mode.tools.includes(partner) || mode.preActivatedTools.includes(partner));
}

/** The tier-3/4 built-ins a custom tool in an allowlist needs to become callable. */
const DISCOVERY_TOOLS = new Set(["tool_search", "tool_activate"]);

/**
 * isToolAllowed for a session that also knows its custom tools: an allowlist that
 * names a custom tool implicitly allows tool_search and tool_activate (otherwise the
 * listed tool could never be activated), unless disallowedTools names them.
 */
export function isToolAllowedWithCustom(mode: ModeConfig, name: string, customNames: ReadonlySet<string>): boolean {
  if (isToolAllowed(mode, name)) return true;
  if (!DISCOVERY_TOOLS.has(name) || listNames(mode.disallowedTools, name)) return false;
  return mode.tools.some((entry) => {
    if (!entry.endsWith("*")) return customNames.has(entry) && !listNames(mode.disallowedTools, entry);
    for (const custom of customNames) if (matchesToolEntry(entry, custom) && !listNames(mode.disallowedTools, custom)) return true;
    return false;
  });
}

/**
 * One entry of `tools`, `disallowedTools` or `preActivatedTools`: an exact tool name,
 * or a prefix ending in "*" (`mcp__<server>__*` names every tool of one MCP server).
 */
export function matchesToolEntry(entry: string, name: string): boolean {
  return entry.endsWith("*") ? name.startsWith(entry.slice(0, -1)) : entry === name;
}

function listNames(list: readonly string[], name: string): boolean {
  return list.some((entry) => matchesToolEntry(entry, name));
}

export function permissionMessage(agent: AgentConfig, modeName: string, name: string): string {
  const mode = modeConfig(agent, modeName);
  if (listNames(mode.disallowedTools, name)) {
    return `tool "${name}" is in disallowedTools of agent "${agent.name}" (mode "${modeName}")`;
  }
  return `tool "${name}" is not in the tools allowlist of agent "${agent.name}" (mode "${modeName}")`;
}
