import type { AgentConfig, ModeConfig } from "../config/types.js";
import { defaultMode } from "../config/defaults.js";

/** Tools an agent gets automatically alongside another (manual: agent_control is paired with agent_spawn). */
const PAIRED: Record<string, string> = { agent_control: "agent_spawn" };

export function modeConfig(agent: AgentConfig, mode: string): ModeConfig {
  return agent.modes[mode] ?? (mode === "chat" ? defaultMode() : { ...defaultMode(), enabled: false });
}

/**
 * Is `name` callable in this mode? `disallowedTools` always wins; an empty
 * `tools` list means every tool; paired tools follow their partner.
 */
export function isToolAllowed(mode: ModeConfig, name: string): boolean {
  if (mode.disallowedTools.includes(name)) return false;
  if (mode.tools.length === 0) return true;
  if (mode.tools.includes(name)) return true;
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
  if (!DISCOVERY_TOOLS.has(name) || mode.disallowedTools.includes(name)) return false;
  return mode.tools.some((tool) => customNames.has(tool) && !mode.disallowedTools.includes(tool));
}

export function permissionMessage(agent: AgentConfig, modeName: string, name: string): string {
  const mode = modeConfig(agent, modeName);
  if (mode.disallowedTools.includes(name)) {
    return `tool "${name}" is in disallowedTools of agent "${agent.name}" (mode "${modeName}")`;
  }
  return `tool "${name}" is not in the tools allowlist of agent "${agent.name}" (mode "${modeName}")`;
}
