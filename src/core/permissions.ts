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

export function permissionMessage(agent: AgentConfig, modeName: string, name: string): string {
  const mode = modeConfig(agent, modeName);
  if (mode.disallowedTools.includes(name)) {
    return `tool "${name}" is in disallowedTools of agent "${agent.name}" (mode "${modeName}")`;
  }
  return `tool "${name}" is not in the tools allowlist of agent "${agent.name}" (mode "${modeName}")`;
}
