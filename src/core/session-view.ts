import { DEFAULT_CONTEXT_WINDOW } from "../config/defaults.js";
import type { AgentConfig, VeilConfig } from "../config/types.js";
import { isVeilError } from "../errors.js";
import { modelInfo, pickModelKey } from "../llm/models.js";
import type { SessionRow } from "../store/store.js";

/** A session row as clients see it (`GET /sessions`, `veil sessions --json`). */
export type PublicSession = ReturnType<typeof publicRow>;

function publicRow(row: SessionRow, contextWindow: number) {
  return {
    id: row.id,
    title: row.title,
    agent: row.agent,
    mode: row.mode,
    status: row.status,
    origin: row.origin,
    ephemeral: row.ephemeral,
    parent_session_id: row.parent_session_id,
    spawn_depth: row.spawn_depth,
    instance_name: row.instance_name,
    model: row.model,
    reasoning: row.reasoning,
    budget_override: row.budget_override,
    context_size: row.context_size,
    /** The window of the model its next turn would use (models.json > the built-in catalogue > 128k). */
    context_window: contextWindow,
    token_usage: row.token_usage,
    cost_usd: row.cost_usd,
    forked_from: row.forked_from,
    /** The API key the session belongs to (null: made with the server secret). */
    owner_key: row.owner_key,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Rows → their public form, with each session's context window from its model (session > agent > defaultModel). */
export function sessionView(config: VeilConfig, agents: () => Record<string, AgentConfig>): (row: SessionRow) => PublicSession {
  return (row) => {
    const known = agents();
    const agent = Object.hasOwn(known, row.agent) ? known[row.agent] : undefined;
    let window = DEFAULT_CONTEXT_WINDOW;
    try {
      window = modelInfo(pickModelKey({ session: row.model, agent: agent?.model, settings: config.settings }), config.models).context_window;
    } catch (error) {
      // No model configured: the default window, as a turn would find once one is.
      if (!isVeilError(error)) throw error;
    }
    return publicRow(row, window);
  };
}
