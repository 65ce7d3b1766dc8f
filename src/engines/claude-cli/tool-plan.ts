import type { ClaudeCliSettings, ModeConfig } from "../../config/types.js";
import type { Logger } from "../../base/log.js";
import { matchesToolEntry } from "../../tools/permissions.js";
import type { SessionToolset } from "../../tools/registry.js";
import type { RegisteredTool } from "../../tools/types.js";

/** Veil's tools reach the SDK as this in-process MCP server; the model sees `mcp__veil__<tool>`. */
export const MCP_SERVER_NAME = "veil";
export const MCP_PREFIX = `mcp__${MCP_SERVER_NAME}__`;

/**
 * Native Claude Code tools Veil may enable. Anything else a newer SDK ships (sub-agents,
 * cron, workflows, its own wake-ups…) stays off, so an SDK update cannot leak tools in.
 */
export const KNOWN_SAFE_NATIVES: ReadonlySet<string> = new Set([
  "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS",
  "Bash", "BashOutput", "KillShell", "WebFetch", "WebSearch", "TodoWrite",
]);

/** Native default: `Read` views images, which MCP results cannot carry. */
export const DEFAULT_NATIVES = ["Read"];

/** Veil names whose Claude-native equivalent does the same job. */
const NATIVE_EQUIVALENT: Record<string, string> = {
  read_file: "Read", write_file: "Write", edit_file: "Edit", bash: "Bash", bash_output: "BashOutput",
  kill_shell: "KillShell", glob: "Glob", grep: "Grep", list_dir: "LS", web_fetch: "WebFetch",
  web_search: "WebSearch", todo_write: "TodoWrite",
};

export interface ToolPlan {
  /** Veil tools wrapped in the `veil` MCP server (built-ins and custom ones). */
  wrapped: RegisteredTool[];
  /** Native tools in the SDK's base set. */
  natives: string[];
  /** For the SDK's own disallowedTools: natives not kept and Veil tools disallowed by the mode. */
  sdkDisallowed: string[];
}

/**
 * Which tools a claude-cli run gets (README "The claude-cli engine"): every
 * discoverable custom tool up front, built-ins regardless of the mode's allowlist,
 * `disallowedTools` removing anything, natives from a known-safe allowlist, and a
 * custom tool that collides with an enabled native left unwrapped (with a warning).
 */
export function planTools(toolset: SessionToolset, settings: ClaudeCliSettings | undefined, log: Logger): ToolPlan {
  const mode = toolset.modeSettings();
  const natives = chooseNatives(settings, log).filter((name) => !disallowed(mode, name));
  const nativeSet = new Set(natives);
  const writesThroughVeil = !nativeSet.has("Write") || !nativeSet.has("Edit");
  const wrapped: RegisteredTool[] = [];
  for (const tool of toolset.searchable()) {
    const native = nativeFor(tool.name, nativeSet);
    if (tool.tier === "custom" && native) {
      log.warn(`custom tool "${tool.name}" collides with Claude's native "${native}" on the claude-cli engine and is not registered; the native takes precedence. Rename the custom tool.`, { tool: tool.name });
      continue;
    }
    // read_file stays while Veil's write/edit tools do, since their must-have-read gate needs it.
    if (tool.tier === "builtin" && native && !(tool.name === "read_file" && writesThroughVeil)) continue;
    wrapped.push(tool);
  }
  const disallowedNatives = [...KNOWN_SAFE_NATIVES].filter((name) => !nativeSet.has(name));
  // Exact names only: patterns (mcp__server__*) are already applied to what is wrapped.
  const disallowedVeil = mode.disallowedTools.filter((name) => !KNOWN_SAFE_NATIVES.has(name) && !name.endsWith("*")).map((name) => `${MCP_PREFIX}${name}`);
  return { wrapped, natives, sdkDisallowed: [...disallowedNatives, ...disallowedVeil] };
}

function disallowed(mode: ModeConfig, name: string): boolean {
  return mode.disallowedTools.some((entry) => matchesToolEntry(entry, name));
}

function chooseNatives(settings: ClaudeCliSettings | undefined, log: Logger): string[] {
  const requested = settings?.nativeTools ?? (settings?.redirectBasicTools === false ? [...KNOWN_SAFE_NATIVES] : DEFAULT_NATIVES);
  const kept: string[] = [];
  for (const name of requested) {
    if (KNOWN_SAFE_NATIVES.has(name)) kept.push(name);
    else log.warn(`settings.claudeCli.nativeTools: "${name}" is not in the known-safe native set and stays off`, { tool: name });
  }
  return kept;
}

function nativeFor(name: string, natives: ReadonlySet<string>): string | undefined {
  const equivalent = NATIVE_EQUIVALENT[name];
  if (equivalent && natives.has(equivalent)) return equivalent;
  for (const native of natives) if (native.toLowerCase() === name.toLowerCase()) return native;
  return undefined;
}

/** `mcp__veil__bash` → `bash`; other names (natives) unchanged. */
export function veilToolName(sdkName: string): string {
  return sdkName.startsWith(MCP_PREFIX) ? sdkName.slice(MCP_PREFIX.length) : sdkName;
}

export type PermissionAnswer = { behavior: "allow"; updatedInput: Record<string, unknown> } | { behavior: "deny"; message: string };

/** The SDK's canUseTool: disallowedTools and the plan (wrapped Veil tools, kept natives) decide. */
export function permissionFor(plan: ToolPlan, mode: ModeConfig, name: string, input: Record<string, unknown>): PermissionAnswer {
  const veilName = veilToolName(name);
  if (disallowed(mode, veilName)) return { behavior: "deny", message: `tool "${veilName}" is in disallowedTools` };
  const known = name.startsWith(MCP_PREFIX) ? plan.wrapped.some((t) => t.name === veilName) : plan.natives.includes(name);
  if (!known) return { behavior: "deny", message: `tool "${name}" is not enabled for this agent` };
  return { behavior: "allow", updatedInput: input };
}
