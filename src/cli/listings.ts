import { loadConfig } from "../config/load.js";
import { createRuntime } from "../runtime.js";
import { describeTools } from "../tools/catalog.js";
import type { CliIo } from "./run.js";

export async function agentsCommand(command: { workspace: string; json: boolean }, io: CliIo): Promise<number> {
  const config = loadConfig({ workspace: command.workspace, env: io.env });
  const agents = Object.values(config.agents);
  if (command.json) io.stdout(JSON.stringify(agents.map((a) => ({ name: a.name, description: a.description, model: a.model ?? null, source: a.source, modes: Object.keys(a.modes) })), null, 2) + "\n");
  else for (const a of agents) io.stdout(`${a.name.padEnd(20)} ${a.source.padEnd(8)} ${a.model ?? "(default model)"}  ${a.description}\n`);
  return 0;
}

export async function toolsCommand(command: { workspace: string; agent: string; json: boolean }, io: CliIo): Promise<number> {
  const runtime = await createRuntime({ workspace: command.workspace, env: io.env });
  try {
    const agent = runtime.agents()[command.agent];
    if (!agent) {
      io.stderr(`no agent named "${command.agent}"\n`);
      return 1;
    }
    const listing = await describeTools({ builtins: runtime.builtins, customTools: runtime.customTools, agent });
    if (command.json) {
      io.stdout(JSON.stringify(listing, null, 2) + "\n");
      return 0;
    }
    for (const tool of listing.tools) {
      io.stdout(`${tool.name.padEnd(22)} ${tool.tier.padEnd(8)} ${tool.state.padEnd(14)} ${tool.scope ?? ""}${tool.folder ? ` ${tool.folder}` : ""}${tool.server ? ` ${tool.server}` : ""}\n`);
    }
    // An MCP reason already names its server or file.
    for (const broken of listing.broken) io.stdout(`(broken) ${broken.scope === "mcp" ? broken.reason : `${broken.folder}: ${broken.reason}`}\n`);
    return 0;
  } finally {
    await runtime.close();
  }
}

export async function sessionsCommand(command: { workspace: string; json: boolean }, io: CliIo): Promise<number> {
  const runtime = await createRuntime({ workspace: command.workspace, env: io.env });
  try {
    const rows = await runtime.store.listSessions();
    if (command.json) io.stdout(JSON.stringify(rows, null, 2) + "\n");
    else for (const s of rows) io.stdout(`${s.id}  ${s.agent.padEnd(14)} ${s.status.padEnd(9)} ${s.created_at}  ctx=${s.context_size}${s.parent_session_id ? `  parent=${s.parent_session_id}` : ""}\n`);
    return 0;
  } finally {
    await runtime.close();
  }
}
