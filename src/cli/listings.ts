import { loadConfig } from "../config/load.js";
import { warnUnknownKeysOnce } from "../config/unknown-keys.js";
import { VeilError } from "../errors.js";
import { createRuntime, type Runtime } from "../runtime.js";
import { describeTools, publicToolList, type ToolListing } from "../tools/catalog.js";
import { publicSkillList } from "../tools/skills/listing.js";
import type { AgentConfig } from "../config/types.js";
import type { ListCommand, LogFormat, SkillsCommand, ToolsCommand } from "./args.js";
import { cliLogger, type CliIo } from "./terminal.js";

/** Widest description shown in a listing line; `--json` has the whole text. */
const DESCRIPTION_WIDTH = 100;
/** The source line of a custom tool starts under its description. */
const SOURCE_INDENT = 22 + 1 + 8 + 1 + 14 + 1;

export async function agentsCommand(command: ListCommand, io: CliIo): Promise<number> {
  const config = loadConfig({ workspace: command.workspace, env: io.env, onUnknownKey: warnUnknownKeysOnce(cliLogger(io, command.logFormat, "warn")) });
  const agents = Object.values(config.agents);
  if (command.json) io.stdout(JSON.stringify(agents.map((a) => ({ name: a.name, description: a.description, model: a.model ?? null, source: a.source, modes: Object.keys(a.modes) })), null, 2) + "\n");
  else for (const a of agents) io.stdout(`${a.name.padEnd(20)} ${a.source.padEnd(8)} ${a.model ?? "(default model)"}  ${a.description}\n`);
  return 0;
}

/**
 * The same listing as `GET /tools`; the text form shows each tool's first description line
 * and, under a custom tool, where it comes from (its folder, or its MCP server).
 */
export async function toolsCommand(command: ToolsCommand, io: CliIo): Promise<number> {
  return withRuntime(command, io, async (runtime) => {
    const agent = knownAgent(runtime, command.agent);
    const listing = publicToolList(await describeTools({ builtins: runtime.builtins, customTools: runtime.customTools, skills: runtime.skills, agent }));
    if (command.json) {
      io.stdout(JSON.stringify(listing, null, 2) + "\n");
      return 0;
    }
    for (const tool of listing) {
      // An MCP problem already names its server or file.
      if (tool.state === "broken") io.stdout(`(broken) ${tool.scope === "mcp" ? tool.error : `${tool.folder}: ${tool.error}`}\n`);
      else {
        io.stdout(`${tool.name.padEnd(22)} ${tool.tier.padEnd(8)} ${tool.state.padEnd(14)} ${firstLine(tool.description)}\n`);
        const source = sourceLine(tool);
        if (source) io.stdout(`${"".padEnd(SOURCE_INDENT)}${source}\n`);
      }
    }
    return 0;
  });
}

/**
 * The same listing as `GET /skills?agent=`: each skill in effect, then the shadowed ones (with
 * the folder that wins) and the broken folders (with why), each with its folder under it.
 */
export async function skillsCommand(command: SkillsCommand, io: CliIo): Promise<number> {
  return withRuntime(command, io, async (runtime) => {
    const listing = await publicSkillList(runtime.skills.discover(knownAgent(runtime, command.agent)));
    if (command.json) {
      io.stdout(JSON.stringify(listing, null, 2) + "\n");
      return 0;
    }
    if (listing.length === 0) io.stdout(`no skills for agent "${command.agent}" (SKILL.md folders in the agent's skills/, .veil/skills/, .claude/skills/ or $VEIL_HOME/skills/)\n`);
    for (const skill of listing) {
      if (skill.state === "broken") io.stdout(`(broken) ${skill.file}: ${skill.error}\n`);
      else {
        io.stdout(`${skill.name.padEnd(22)} ${skill.scope.padEnd(8)} ${skill.state.padEnd(9)} ${firstLine(skill.description)}\n`);
        io.stdout(`${"".padEnd(SKILL_INDENT)}${skill.state === "shadowed" ? `${skill.folder} (shadowed by ${skill.shadowedBy})` : skill.folder}\n`);
      }
    }
    return 0;
  });
}

/** The folder line of a skill starts under its description. */
const SKILL_INDENT = 22 + 1 + 8 + 1 + 9 + 1;

function knownAgent(runtime: Runtime, name: string): AgentConfig {
  const agent = Object.hasOwn(runtime.agents(), name) ? runtime.agents()[name] : undefined;
  if (!agent) throw new VeilError("AGENT_NOT_FOUND", `no agent named "${name}" (known: ${Object.keys(runtime.agents()).join(", ")})`);
  return agent;
}

/** A one-shot runtime over the workspace for the length of one listing or command. */
export async function withRuntime(command: { workspace: string; logFormat?: LogFormat }, io: CliIo, body: (runtime: Runtime) => Promise<number>): Promise<number> {
  const runtime = await createRuntime({ workspace: command.workspace, mode: "oneshot", env: io.env, log: cliLogger(io, command.logFormat, "warn") });
  try {
    return await body(runtime);
  } finally {
    await runtime.close();
  }
}

/** `project /ws/.veil/tools/echo_upper`, `mcp server "files"`; none for a built-in. */
function sourceLine(tool: ToolListing): string | undefined {
  if (tool.scope === "mcp") return `mcp server ${JSON.stringify(tool.server ?? "")}`;
  return tool.folder ? `${tool.scope ?? "custom"} ${tool.folder}` : undefined;
}

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > DESCRIPTION_WIDTH ? `${line.slice(0, DESCRIPTION_WIDTH - 1)}…` : line;
}
