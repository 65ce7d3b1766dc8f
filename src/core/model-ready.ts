import { selectEngine } from "../engines/select.js";
import { pickModelKey } from "../llm/models.js";
import type { SessionRow } from "../store/store.js";
import type { SessionManagerDeps } from "./session-types.js";

/**
 * The model a turn of this session would use (per-call > session > agent > settings), checked
 * before the turn is asked for: one is configured, and its engine has what the key needs (a
 * provider and that provider's key; the Claude Agent SDK and an Anthropic key for cc/). Throws
 * CONFIG_ERROR naming the fix, so a client is told at once (a streamed chat before its stream
 * starts) instead of getting a turn that fails.
 */
export async function checkModelReady(deps: Pick<SessionManagerDeps, "agents" | "config" | "engines">, session: Pick<SessionRow, "agent" | "model">, perCallModel?: string): Promise<string> {
  const agents = deps.agents(session.agent);
  const agent = Object.hasOwn(agents, session.agent) ? agents[session.agent] : undefined;
  const key = pickModelKey({ perCall: perCallModel, session: session.model, agent: agent?.model, settings: deps.config.settings });
  await selectEngine(deps.engines, key).checkReady?.(key);
  return key;
}
