import type { AgentConfig } from "../config/types.js";
import type { LlmMessage } from "../llm/types.js";
import type { MessageRow, SessionRow } from "../store/store.js";
import { compactionStateFromRows, historyMessages } from "./compaction/view.js";

/**
 * The system prompt, the same for every session of an agent started the same day, so provider
 * prompt caches (and llama.cpp's slot cache) share it: chat templates render the system
 * message and then the tools, so the first byte that differs cuts the cacheable prefix there.
 * Order: agent prompt, the AGENTS.md instructions (global, then the project's), tier-2 tool
 * summary and skills, workspace, and the date the session started (not today's date, so a
 * session that runs past midnight keeps a byte-stable prompt). The session id is left out:
 * it would make every session's prompt unique. What differs per session is in
 * buildSessionBrief, sent as a second system message.
 */
export function buildSystemPrompt(options: { agent: AgentConfig; session: SessionRow; workspace: string; toolSummary: string; instructions?: string }): string {
  const { agent, session } = options;
  const parts = [agent.systemPrompt.trim(), options.instructions ?? "", options.toolSummary, `## Environment\nWorkspace: ${options.workspace}`];
  parts.push(`Session started: ${sessionDate(session)}`);
  return parts.filter(Boolean).join("\n\n");
}

/**
 * The part of a sub-agent's system prompt its parent chose: `## Objective` and
 * `## Success Criteria` (empty for a session without them). It follows the system prompt
 * and the tools, so sub-agents with different objectives share everything before it.
 */
export function buildSessionBrief(session: Pick<SessionRow, "objective" | "success_criteria">): string {
  const parts: string[] = [];
  if (session.objective) parts.push(`## Objective\n${session.objective.trim()}`);
  if (session.success_criteria) parts.push(`## Success Criteria\n${session.success_criteria.trim()}`);
  return parts.join("\n\n");
}

/** The session's creation day (UTC); created_at is ISO-8601 in every store. */
function sessionDate(session: SessionRow): string {
  return session.created_at.slice(0, 10);
}

/**
 * Stored rows → model messages, as the session's compaction flags leave them (the latest
 * summary, rows not compacted, pruned tool results as stubs; see compaction/view.ts). Tool
 * results are put back in call order right after their assistant message, and a call with
 * no result gets a placeholder, so the request is valid whatever the store holds.
 * Multimodal tool output is never stored.
 */
export function rowsToMessages(rows: readonly MessageRow[]): LlmMessage[] {
  return historyMessages(rows, compactionStateFromRows(rows));
}

export { rowToMessage } from "./compaction/view.js";
