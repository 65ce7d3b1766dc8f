import type { AgentConfig, ModeConfig } from "../config/types.js";
import { isToolAllowed, isToolAllowedWithCustom, matchesToolEntry, modeConfig, permissionMessage } from "./permissions.js";
import type { LlmToolSpec } from "../llm/types.js";
import type { Store } from "../store/store.js";
import { precompiledValidators } from "../base/validation.js";
import type { VeilConfig } from "../config/types.js";
import { parseToolArguments } from "../llm/tool-arguments.js";
import type { Logger, RegisteredTool, ToolContext, TouchScope } from "./types.js";
import type { Skill } from "./skills/source.js";
import { skillsSection } from "./skills/summary.js";

/** The tool that loads a skill; registered only when the agent has skills. */
export const SKILL_TOOL_NAME = "skill";

/** Where custom tools come from (tool folders, MCP servers). */
export interface CustomToolSource {
  /** Custom tools visible to an agent, already resolved across tiers (agent > project > global). */
  discover(agent: AgentConfig): Promise<RegisteredTool[]>;
  /** What was skipped in the last discovery for this agent (a folder, a server, a tool), and why. */
  broken?(agent: AgentConfig): BrokenTool[];
}

export interface BrokenToolFolder {
  scope: "agent" | "project" | "global";
  folder: string;
  file: string;
  reason: string;
}

/** An MCP server that failed (or a bad .mcp.json: server null), or one tool of a server that was skipped. */
export interface BrokenMcpEntry {
  scope: "mcp";
  server: string | null;
  tool?: string;
  file?: string;
  reason: string;
}

export type BrokenTool = BrokenToolFolder | BrokenMcpEntry;

/** Several sources as one; on a name clash the earlier source wins. */
export function combineToolSources(sources: readonly CustomToolSource[]): CustomToolSource {
  return {
    async discover(agent) {
      const lists = await Promise.all(sources.map((source) => source.discover(agent)));
      const byName = new Map<string, RegisteredTool>();
      for (const tool of lists.flat()) if (!byName.has(tool.name)) byName.set(tool.name, tool);
      return [...byName.values()];
    },
    broken(agent) {
      return sources.flatMap((source) => source.broken?.(agent) ?? []);
    },
  };
}

/** The tier-2 summary stays under this size; past it MCP tools are summarised per server, then skills lose their descriptions. */
export const SUMMARY_BUDGET_BYTES = 8 * 1024;

export type ToolResolution = { ok: true; tool: RegisteredTool } | { ok: false; code: "TOOL_NOT_FOUND" | "PERMISSION_DENIED"; message: string };

export type ActivationResult = { ok: true; name: string; already: boolean } | { ok: false; code: "TOOL_NOT_FOUND" | "PERMISSION_DENIED"; message: string };

const ACTIVATED_KEY = "activatedTools";

/**
 * The tools of one session: built-ins (tier 1), every custom tool visible to the
 * agent (tier 2 summary), and the activated ones (in tools[]). Permissions are
 * checked when building tools[], at activation and at every call.
 */
export class SessionToolset {
  private readonly activated = new Set<string>();
  private specCache: LlmToolSpec[] | null = null;
  private upFront = false;
  private warmUpContext?: (call: { id: string; name: string }) => ToolContext;

  private constructor(
    private readonly builtins: ReadonlyMap<string, RegisteredTool>,
    private readonly custom: ReadonlyMap<string, RegisteredTool>,
    private readonly agent: AgentConfig,
    private readonly mode: string,
    private readonly sessionId: string,
    private readonly store: Store,
    private readonly skillList: readonly Skill[],
    private readonly touchScope: TouchScope,
  ) {}

  static async create(options: {
    builtins: readonly RegisteredTool[];
    custom: readonly RegisteredTool[];
    agent: AgentConfig;
    mode: string;
    sessionId: string;
    store: Store;
    log: Logger;
    /** Skills by name (sorted); reachable through the `skill` tool when it is among the builtins. */
    skills?: readonly Skill[];
    /** The runtime's configuration (its workspace resolves the paths calls touch). */
    config: VeilConfig;
  }): Promise<SessionToolset> {
    const builtins = new Map(options.builtins.map((t) => [t.name, t]));
    const custom = new Map<string, RegisteredTool>();
    for (const tool of options.custom) if (!builtins.has(tool.name)) custom.set(tool.name, tool);
    const scope: TouchScope = { workspace: options.config.paths.workspace, paths: options.config.paths, agent: options.agent };
    const set = new SessionToolset(builtins, custom, options.agent, options.mode, options.sessionId, options.store, options.skills ?? [], scope);
    const mode = modeConfig(options.agent, options.mode);
    for (const name of expandPatterns(mode.preActivatedTools, custom)) {
      if (builtins.has(name)) {
        options.log.info(`preActivatedTools: "${name}" is a built-in tool, already in tools[]; the entry has no effect`, { agent: options.agent.name });
      } else if (!custom.has(name)) {
        options.log.warn(`preActivatedTools: no custom tool named "${name}"; skipped`, { agent: options.agent.name });
      } else if (!isToolAllowed(mode, name)) {
        options.log.warn(`preActivatedTools: ${permissionMessage(options.agent, options.mode, name)}; skipped`, { agent: options.agent.name });
      } else {
        set.activated.add(name);
      }
    }
    const persisted = (await options.store.getSessionMeta<string[]>(options.sessionId, ACTIVATED_KEY)) ?? [];
    for (const name of persisted) if (custom.has(name) && isToolAllowed(mode, name)) set.activated.add(name);
    return set;
  }

  private customNames: ReadonlySet<string> | null = null;

  private allowed(name: string): boolean {
    const mode = modeConfig(this.agent, this.mode);
    if (this.upFront && this.builtins.has(name)) return !mode.disallowedTools.some((entry) => matchesToolEntry(entry, name));
    this.customNames ??= new Set(this.custom.keys());
    return isToolAllowedWithCustom(mode, name, this.customNames);
  }

  /**
   * The claude-cli engine's tool model (README "The claude-cli engine"): every
   * custom tool the mode allows is callable without tool_activate, and the mode's `tools`
   * allowlist gates custom tools only (built-ins stay); disallowedTools still gates all.
   */
  registerAllUpFront(): void {
    this.upFront = true;
    this.specCache = null;
  }

  /** The mode this toolset was built for (permissions, preActivatedTools). */
  modeSettings(): ModeConfig {
    return modeConfig(this.agent, this.mode);
  }

  /** tools[] for the next model call. */
  specs(): LlmToolSpec[] {
    if (this.specCache) return this.specCache;
    const specs: LlmToolSpec[] = [];
    for (const tool of this.builtins.values()) if (this.allowed(tool.name)) specs.push(toSpec(tool));
    for (const name of this.activated) {
      const tool = this.custom.get(name);
      if (tool && this.allowed(name)) specs.push(toSpec(tool));
    }
    this.specCache = specs;
    return specs;
  }

  /**
   * Tier 2: one line per custom tool the agent may use and has not activated, then the
   * skills. The whole summary stays under SUMMARY_BUDGET_BYTES: past it MCP tools are
   * summarised per server first, then skills lose their descriptions (skills/summary.ts).
   */
  summary(): string {
    const tools = this.toolSummary();
    const skills = this.usableSkills();
    const fits = (text: string) => Buffer.byteLength(text) < SUMMARY_BUDGET_BYTES;
    const full = joinSections(tools.full, skillsSection(skills, Number.POSITIVE_INFINITY));
    if (fits(full)) return full;
    const toolPart = tools.condensed ?? tools.full;
    const separator = toolPart && skills.length ? 2 : 0;
    return joinSections(toolPart, skillsSection(skills, SUMMARY_BUDGET_BYTES - Buffer.byteLength(toolPart) - separator));
  }

  /** The custom tools' part of the summary, in full and (when MCP tools are listed) condensed per server. */
  private toolSummary(): { full: string; condensed: string | null } {
    const lines: string[] = [];
    const mcpLines: string[] = [];
    const perServer = new Map<string, { prefix: string; count: number }>();
    for (const tool of this.custom.values()) {
      if (this.activated.has(tool.name) || !this.allowed(tool.name)) continue;
      const line = `- ${tool.name}: ${firstLine(tool.description)}`;
      if (tool.source?.scope !== "mcp") {
        lines.push(line);
        continue;
      }
      mcpLines.push(line);
      const server = perServer.get(tool.source.server) ?? { prefix: `${tool.name.split("__", 2).join("__")}__`, count: 0 };
      server.count++;
      perServer.set(tool.source.server, server);
    }
    // Up front (claude-cli) every allowed custom tool is already callable with its full schema.
    if (this.upFront || (lines.length === 0 && mcpLines.length === 0)) return { full: "", condensed: null };
    const header = [
      "## Custom tools",
      "These tools exist but are not loaded. Call tool_search to read a tool's schema, then tool_activate to make it callable on your next step.",
    ];
    const full = [...header, ...lines, ...mcpLines].join("\n");
    if (mcpLines.length === 0) return { full, condensed: null };
    const servers = [...perServer].map(([name, { prefix, count }]) => `- ${prefix}*: ${count} tools of MCP server "${name}"`);
    return { full, condensed: [...header, ...lines, "MCP servers (too many tools to list here; call tool_search with the server name or a word of the task to see them):", ...servers].join("\n") };
  }

  /** The skills this session may load: none unless the `skill` tool is registered and allowed. */
  usableSkills(): readonly Skill[] {
    return this.builtins.has(SKILL_TOOL_NAME) && this.allowed(SKILL_TOOL_NAME) ? this.skillList : [];
  }

  /** A usable skill by name. */
  skill(name: string): Skill | undefined {
    return this.usableSkills().find((skill) => skill.name === name);
  }

  resolve(name: string): ToolResolution {
    const tool = this.builtins.get(name) ?? this.custom.get(name);
    if (!tool) return { ok: false, code: "TOOL_NOT_FOUND", message: `no tool named "${name}"` };
    if (!this.allowed(name)) return { ok: false, code: "PERMISSION_DENIED", message: permissionMessage(this.agent, this.mode, name) };
    if (tool.tier === "custom" && !this.upFront && !this.activated.has(name)) {
      return { ok: false, code: "TOOL_NOT_FOUND", message: `custom tool "${name}" is not active; call tool_activate({ name: "${name}" }) first` };
    }
    return { ok: true, tool };
  }

  /**
   * The paths a call writes, as its tool declares them (ToolDefinition.touches): none for a
   * tool that declares nothing, or for a call that fails before it runs (unknown or not
   * allowed tool, arguments that are not a valid input).
   */
  touches(call: { name: string; arguments: string }): string[] {
    const resolution = this.resolve(call.name);
    if (!resolution.ok || !resolution.tool.touches) return [];
    const parsed = parseToolArguments(call.arguments);
    if (!parsed.ok || resolution.tool.validate(parsed.value) !== null) return [];
    try {
      return resolution.tool.touches(parsed.value, this.touchScope);
    } catch {
      return [];
    }
  }

  /** Every tool this session could see (for tool_search), permission-filtered. */
  searchable(): RegisteredTool[] {
    return [...this.builtins.values(), ...this.custom.values()].filter((t) => this.allowed(t.name));
  }

  /**
   * On purpose (documented in the README): a tool the mode does
   * not allow answers PERMISSION_DENIED instead of a false `{ activated }`.
   */
  async activate(name: string): Promise<ActivationResult> {
    if (this.builtins.has(name)) return { ok: true, name, already: true };
    if (!this.custom.has(name)) return { ok: false, code: "TOOL_NOT_FOUND", message: `no custom tool named "${name}"; use tool_search to find one` };
    if (!this.allowed(name)) return { ok: false, code: "PERMISSION_DENIED", message: permissionMessage(this.agent, this.mode, name) };
    if (this.upFront) return { ok: true, name, already: true };
    const already = this.activated.has(name);
    if (!already) {
      this.activated.add(name);
      this.specCache = null;
      await this.store.setSessionMeta(this.sessionId, ACTIVATED_KEY, [...this.activated]);
    }
    return { ok: true, name, already };
  }

  isActivated(name: string): boolean {
    return this.activated.has(name);
  }

  customTools(): RegisteredTool[] {
    return [...this.custom.values()];
  }

  builtinTools(): RegisteredTool[] {
    return [...this.builtins.values()];
  }
  /** Arms warmUp(): `context` makes the ToolContext a tool's warm-up gets. */
  prepareWarmUp(context: (call: { id: string; name: string }) => ToolContext): void {
    this.warmUpContext = context;
  }

  /**
   * Once per toolset (one turn), when the engine's first model request is out: loads the
   * built-in validators' index and runs the warm-up of every built-in tool this session may
   * call (bash starts its shell), so first calls cost what later ones do.
   */
  warmUp(): void {
    const context = this.warmUpContext;
    this.warmUpContext = undefined;
    if (!context) return;
    precompiledValidators();
    for (const tool of this.builtins.values()) {
      if (!tool.warmUp || !this.allowed(tool.name)) continue;
      try {
        tool.warmUp(context({ id: `warm-up-${tool.name}`, name: tool.name }));
      } catch {
        // Best effort: whatever failed here fails again, reported, in the real call.
      }
    }
  }

}

/** preActivatedTools entries with `mcp__<server>__*`-style patterns replaced by the custom tools they name. */
function expandPatterns(entries: readonly string[], custom: ReadonlyMap<string, RegisteredTool>): string[] {
  const out = new Set<string>();
  for (const entry of entries) {
    if (!entry.endsWith("*")) out.add(entry);
    else for (const name of custom.keys()) if (matchesToolEntry(entry, name)) out.add(name);
  }
  return [...out];
}

function joinSections(...sections: string[]): string {
  return sections.filter(Boolean).join("\n\n");
}

function toSpec(tool: RegisteredTool): LlmToolSpec {
  return { name: tool.name, description: tool.description, parameters: tool.modelSchema ?? tool.inputSchema };
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0]?.trim() ?? "";
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
