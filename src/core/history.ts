import type { MessageRow } from "../store/store.js";

/** Calls of stored assistant messages that have no tool result row, in call order. */
export function unansweredCalls(rows: readonly MessageRow[]): { id: string; name: string; messageId: string }[] {
  const answered = new Set<string>();
  for (const row of rows) if (row.role === "tool" && row.tool_call_id) answered.add(row.tool_call_id);
  const missing: { id: string; name: string; messageId: string }[] = [];
  for (const row of rows) {
    if (row.role !== "assistant" || !row.tool_calls) continue;
    for (const call of row.tool_calls) if (!answered.has(call.id)) missing.push({ id: call.id, name: call.name, messageId: row.id });
  }
  return missing;
}
