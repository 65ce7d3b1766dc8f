import type { AgentConfig } from "../config/types.js";
import type { LlmMessage } from "../llm/types.js";
import type { MessageRow, SessionRow } from "../store/store.js";
import { compactionStateFromRows, historyMessages } from "./compaction/view.js";

/** The system prompt: agent prompt, spawn objective, tier-2 tool summary, environment facts. */
export function buildSystemPrompt(options: {
  agent: AgentConfig;
  session: SessionRow;
  workspace: string;
  toolSummary: string;
  now: Date;
}): string {
  const parts = [options.agent.systemPrompt.trim()];
  if (options.session.objective) parts.push(`## Objective\n${options.session.objective.trim()}`);
  if (options.session.success_criteria) parts.push(`## Success Criteria\n${options.session.success_criteria.trim()}`);
  if (options.toolSummary) parts.push(options.toolSummary);
  parts.push(
    `## Environment\nWorkspace: ${options.workspace}\nSession: ${options.session.id}\nDate: ${options.now.toISOString().slice(0, 10)}`,
  );
  return parts.filter(Boolean).join("\n\n");
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
