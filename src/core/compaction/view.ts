import type { LlmMessage } from "../../llm/types.js";
import type { MessageRow, StoredToolCall } from "../../store/store.js";
import { toolResultContent } from "../../tools/result-content.js";
import type { Attachment } from "../../tools/types.js";
import { cancelledText } from "../tool-calls.js";
import { prunedToolStub } from "./stub.js";
import { systemMessages } from "../../engines/system-messages.js";
import { userContentOfRow } from "../chat-content.js";

/**
 * What compaction reads of a stored message row (a MessageRow fits). `kind` and
 * `compacted` are the flags a compaction sets on rows; until the store has columns for them they may live in
 * `meta` (`meta.kind`, `meta.compacted`, `meta.pruned`), which compactionStateFromRows() reads too.
 */
export type HistoryRow = Pick<MessageRow, "id" | "seq" | "role" | "content" | "thinking" | "tool_calls" | "tool_call_id" | "meta"> & {
  kind?: string | null;
  compacted?: boolean | null;
  reverted?: boolean | null;
  /** Images or audio a tool returned in this process (never stored): shown with the result until it is pruned. */
  attachments?: readonly Attachment[];
};

/**
 * The model's view is rebuilt from the stored rows (never deleted) plus this state:
 * the latest summary, the rows it stands for, and the tool rows shown as stubs.
 */
export interface CompactionState {
  /** The latest summary row (kind "summary"); null before the first summary. */
  summary: { id: string; content: string } | null;
  /** Rows the summary replaces: hidden from the model. */
  compacted: ReadonlySet<string>;
  /** Tool rows whose output the model sees as a stub (stage 1). */
  pruned: ReadonlySet<string>;
}

export const EMPTY_COMPACTION: CompactionState = Object.freeze({ summary: null, compacted: new Set<string>(), pruned: new Set<string>() });

export function isSummaryRow(row: HistoryRow): boolean {
  return (row.kind ?? row.meta?.kind) === "summary";
}

/** The state as the row flags record it: the last summary row, rows flagged compacted, rows flagged pruned. */
export function compactionStateFromRows(rows: readonly HistoryRow[]): CompactionState {
  let summary: CompactionState["summary"] = null;
  const compacted = new Set<string>();
  const pruned = new Set<string>();
  for (const row of rows) {
    // A reverted row (and a reverted summary) is out of the model's history altogether.
    if (row.reverted === true) {
      compacted.add(row.id);
      continue;
    }
    if (isSummaryRow(row)) {
      summary = { id: row.id, content: row.content ?? "" };
      continue;
    }
    if (row.compacted === true || row.meta?.compacted === true) compacted.add(row.id);
    else if (row.meta?.pruned === true) pruned.add(row.id);
  }
  return { summary, compacted, pruned };
}

/** How the summary reaches the model: a user message that says what it is. */
export function summaryMessage(content: string): LlmMessage {
  return {
    role: "user",
    content:
      "<summary>\nThe earlier part of this conversation was compacted into the summary below (the full history is still stored). " +
      `Continue the work from it; re-read files before changing them.\n\n${content.trim()}\n</summary>`,
  };
}

/** Tool-call id → the call, over the assistant rows given. */
export function toolCallIndex(rows: readonly HistoryRow[]): Map<string, StoredToolCall> {
  const calls = new Map<string, StoredToolCall>();
  for (const row of rows) for (const call of row.tool_calls ?? []) calls.set(call.id, call);
  return calls;
}

/** The rows the model still sees, oldest first: not compacted, not summary rows, not system rows. */
export function visibleRows(rows: readonly HistoryRow[], state: CompactionState): HistoryRow[] {
  return rows.filter((row) => !isSummaryRow(row) && row.role !== "system" && !state.compacted.has(row.id));
}

/** One visible row as the model sees it: pruned tool rows become their stub. */
export function viewMessage(row: HistoryRow, state: CompactionState, calls: ReadonlyMap<string, StoredToolCall>): LlmMessage | null {
  if (row.role === "tool" && state.pruned.has(row.id)) {
    const call = calls.get(row.tool_call_id ?? "");
    const name = call?.name ?? (typeof row.meta?.toolName === "string" ? row.meta.toolName : "the tool");
    return { role: "tool", toolCallId: row.tool_call_id ?? "", content: prunedToolStub(name, call?.arguments ?? "", row.content ?? "") };
  }
  return rowToMessage(row);
}

/**
 * The messages of the next model call: system prompt (and session brief), then historyMessages().
 */
export function buildModelView(systemPrompt: string, rows: readonly HistoryRow[], state: CompactionState, sessionBrief?: string): LlmMessage[] {
  return [...systemMessages(systemPrompt, sessionBrief), ...historyMessages(rows, state)];
}

/**
 * The history as the model sees it: the latest summary, then every row not compacted, in
 * order (the last user request and the recent messages are among them, verbatim). Tool
 * results are stored as each call ends, so each is put back right after its assistant
 * message in the order of the calls; every tool_call keeps exactly one answer: a tool row
 * whose call is not in the view is left out, a call whose answer was compacted gets a
 * one-line placeholder, and a call with no stored answer at all (a crash before recovery
 * patched it) gets the interrupted placeholder.
 */
export function historyMessages(rows: readonly HistoryRow[], state: CompactionState): LlmMessage[] {
  const out: LlmMessage[] = [];
  if (state.summary) out.push(summaryMessage(state.summary.content));
  const visible = visibleRows(rows, state);
  const calls = toolCallIndex(visible);
  const results = new ResultQueue(visible);
  for (const row of visible) {
    if (row.role === "tool") continue;
    const message = viewMessage(row, state, calls);
    if (!message) continue;
    out.push(message);
    if (message.role !== "assistant") continue;
    const placed = new Set<string>();
    for (const call of message.toolCalls ?? []) {
      if (placed.has(call.id)) continue;
      placed.add(call.id);
      const result = results.take(call.id, row.seq);
      out.push(result ? viewMessage(result, state, calls)! : missingAnswer(call.id, rows));
    }
  }
  return out;
}

/**
 * Tool rows by call id, oldest first, each handed out once: some local servers reuse ids
 * ("call_0") in every reply, so a result belongs to the first call with its id before it.
 */
class ResultQueue {
  private readonly byId = new Map<string, HistoryRow[]>();

  constructor(rows: readonly HistoryRow[]) {
    for (const row of rows) {
      if (row.role !== "tool" || !row.tool_call_id) continue;
      const list = this.byId.get(row.tool_call_id);
      if (list) list.push(row);
      else this.byId.set(row.tool_call_id, [row]);
    }
  }

  take(callId: string, afterSeq: number): HistoryRow | undefined {
    const list = this.byId.get(callId);
    if (!list) return undefined;
    while (list.length > 0 && list[0]!.seq < afterSeq) list.shift();
    return list.shift();
  }
}

function missingAnswer(toolCallId: string, rows: readonly HistoryRow[]): LlmMessage {
  const stored = rows.some((row) => row.role === "tool" && row.tool_call_id === toolCallId);
  return { role: "tool", toolCallId, content: stored ? "[This tool result is no longer available (compacted).]" : cancelledText() };
}

/** One stored row as a model message (system rows and summary rows have none: the view places the summary). */
export function rowToMessage(row: HistoryRow): LlmMessage | null {
  switch (row.role) {
    case "user":
      return { role: "user", content: userContentOfRow(row) };
    case "assistant":
      return {
        role: "assistant",
        content: row.content,
        thinking: row.thinking,
        toolCalls: row.tool_calls?.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })) ?? undefined,
      };
    case "tool":
      return { role: "tool", toolCallId: row.tool_call_id ?? "", content: toolResultContent(row.content ?? "", row.attachments) };
    default:
      return null;
  }
}

/** Problems with tool-call pairing in a message list (empty when every call has exactly one answer right after it). */
export function checkToolPairing(messages: readonly LlmMessage[]): string[] {
  const problems: string[] = [];
  let pending: string[] = [];
  for (const [i, m] of messages.entries()) {
    if (m.role === "tool") {
      const at = pending.indexOf(m.toolCallId);
      if (at < 0) problems.push(`message ${i}: tool result ${m.toolCallId} answers no open tool call`);
      else pending.splice(at, 1);
      continue;
    }
    if (pending.length > 0) problems.push(`message ${i}: tool calls ${pending.join(", ")} have no result before it`);
    pending = m.role === "assistant" ? (m.toolCalls ?? []).map((c) => c.id) : [];
  }
  if (pending.length > 0) problems.push(`end: tool calls ${pending.join(", ")} have no result`);
  return problems;
}
