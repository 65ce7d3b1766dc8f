import type { IdGenerator } from "../base/ids.js";
import type { MessageRow, Store } from "../store/store.js";
import { cancelledText } from "./tool-calls.js";

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

/**
 * After a crash or a cut run: every assistant tool_call gets exactly one result (a CANCELLED
 * placeholder where the tool never finished), so the next provider request is valid.
 * Calls left in a non-terminal state are closed too. Returns how many placeholders it wrote.
 */
export async function closeDanglingToolCalls(store: Store, sessionId: string, ids: IdGenerator): Promise<number> {
  const rows = await store.listMessages(sessionId);
  const open = new Map((await store.listToolCalls(sessionId, { states: ["pending", "validating", "executing"] })).map((c) => [c.id, c]));
  let written = 0;
  for (const call of unansweredCalls(rows)) {
    const message = { id: ids.next("msg"), session_id: sessionId, role: "tool" as const, content: cancelledText(), tool_call_id: call.id, meta: { toolName: call.name, placeholder: true } };
    if (open.delete(call.id)) await store.recordToolResult({ sessionId, callId: call.id, state: "cancelled", message });
    else await store.appendMessage(message);
    written++;
  }
  for (const call of open.values()) await store.setToolCallState(call.id, sessionId, "cancelled", cancelledText());
  return written;
}
