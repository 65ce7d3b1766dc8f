import { VeilError } from "../errors.js";
import type { NewSession, SessionRow } from "../store/store.js";
import { modeConfig } from "../tools/permissions.js";
import { recordSessionStart } from "./session-hooks.js";
import type { SessionWriter } from "./session-writer.js";
import { chosenTitle } from "./session-title.js";
import type { CreateSessionInput, SessionManagerDeps } from "./session-types.js";

/**
 * A new session of a known agent and enabled mode, within settings.limits.maxLiveSessions
 * (`liveHere`: the open sessions this process holds); its SessionStart hook recorded.
 */
export async function createSession(deps: Omit<SessionManagerDeps, "services">, input: CreateSessionInput, liveHere: number, writerFor: (sessionId: string) => SessionWriter): Promise<SessionRow> {
  const agents = deps.agents(input.agent);
  const agent = agents[input.agent];
  if (!agent) throw new VeilError("AGENT_NOT_FOUND", `no agent named "${input.agent}" (known: ${Object.keys(agents).join(", ")})`);
  const mode = input.mode ?? "chat";
  if (!agent.modes[mode] && mode !== "chat") throw new VeilError("VALIDATION_ERROR", `agent "${agent.name}" has no mode "${mode}"`);
  if (!modeConfig(agent, mode).enabled) throw new VeilError("VALIDATION_ERROR", `mode "${mode}" of agent "${agent.name}" is disabled`);
  const max = deps.config.settings.limits.maxLiveSessions;
  if (liveHere >= max) {
    throw new VeilError("TOO_MANY_SESSIONS", `too many open sessions (limit ${max}, settings.limits.maxLiveSessions); close some first`);
  }
  const row: NewSession = {
    id: input.id ?? deps.ids.next("sess"),
    agent: agent.name,
    mode,
    model: input.model ?? null,
    reasoning: input.reasoning ?? null,
    budget_override: input.budget_override ?? null,
    parent_session_id: input.parent_session_id ?? null,
    spawn_depth: input.spawn_depth ?? 0,
    instance_name: input.instance_name ?? null,
    objective: input.objective ?? null,
    success_criteria: input.success_criteria ?? null,
    title: chosenTitle(input.title ?? null),
    origin: input.origin ?? "api",
    ephemeral: input.ephemeral === true,
    forked_from: input.forked_from ?? null,
    owner_key: input.owner_key ?? null,
  };
  const created = await deps.store.createSession(row);
  await recordSessionStart(deps.hooks, writerFor(created.id), "startup");
  return created;
}
