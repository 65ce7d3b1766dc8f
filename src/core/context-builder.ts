import type { AgentConfig } from "../config/types.js";
import type { LlmMessage } from "../llm/types.js";
import type { MessageRow, SessionRow } from "../store/store.js";
import { cancelledText } from "./tool-calls.js";

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
 * Stored rows → model messages. Tool results are stored as each call finishes, so they are
 * put back in the order of the calls, right after their assistant message; a call with no
 * result (a crash before recovery patched it) gets a placeholder in this view, so the
 * request is valid whatever the store holds. Multimodal tool output was never stored.
 */
export function rowsToMessages(rows: readonly MessageRow[]): LlmMessage[] {
  const results = new Map<string, MessageRow>();
  for (const row of rows) if (row.role === "tool" && row.tool_call_id) results.set(row.tool_call_id, row);
  const out: LlmMessage[] = [];
  const placed = new Set<string>();
  for (const row of rows) {
    // Results are placed after their call below; one whose call is unknown is dropped (providers reject orphans).
    if (row.role === "tool") continue;
    const message = rowToMessage(row);
    if (!message) continue;
    out.push(message);
    if (row.role !== "assistant" || !row.tool_calls) continue;
    for (const call of row.tool_calls) {
      if (placed.has(call.id)) continue;
      placed.add(call.id);
      const result = results.get(call.id);
      out.push({ role: "tool", toolCallId: call.id, content: result?.content ?? cancelledText() });
    }
  }
  return out;
}

export function rowToMessage(row: MessageRow): LlmMessage | null {
  switch (row.role) {
    case "user":
      return { role: "user", content: row.content ?? "" };
    case "assistant":
      return {
        role: "assistant",
        content: row.content,
        thinking: row.thinking,
        toolCalls: row.tool_calls?.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })) ?? undefined,
      };
    case "tool":
      return { role: "tool", toolCallId: row.tool_call_id ?? "", content: row.content ?? "" };
    default:
      return null;
  }
}

