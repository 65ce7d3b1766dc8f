import type { LlmMessage } from "../../llm/types.js";
import { estimateMessageTokens, estimateTextTokens, MESSAGE_OVERHEAD_TOKENS } from "./tokens.js";
import { prunedToolStub } from "./stub.js";
import { toolCallIndex, viewMessage, visibleRows, type CompactionState, type HistoryRow } from "./view.js";

/** A prune that saves less than this per tool result is not worth breaking the prompt cache for. */
export const MIN_PRUNE_SAVING_TOKENS = 64;

/**
 * Index of the first message of the kept-recent tail: the newest whole messages whose sizes
 * add up to at most `keepRecentTokens`. messages.length when none fits.
 */
export function recentStart(messages: readonly LlmMessage[], keepRecentTokens: number): number {
  let total = 0;
  let start = messages.length;
  for (let i = messages.length - 1; i >= 0; i--) {
    total += estimateMessageTokens(messages[i]!);
    if (total > keepRecentTokens) break;
    start = i;
  }
  return start;
}

export interface PruneResult {
  /** Positions (in the list given) of the tool messages to show as stubs, oldest first. */
  indexes: number[];
  /** Estimated tokens the stubs save. */
  savedTokens: number;
}

/**
 * Stage 1: which tool results outside the kept-recent tail lose their body. Only tool
 * messages are touched — assistant tool calls stay, and each keeps its (stubbed) answer, so
 * every tool_call stays answered. `skip` holds positions already stubbed.
 */
export function pruneToolOutputs(messages: readonly LlmMessage[], keepRecentTokens: number, skip: ReadonlySet<number> = new Set()): PruneResult {
  const end = recentStart(messages, keepRecentTokens);
  const names = new Map<string, { name: string; arguments: string }>();
  const indexes: number[] = [];
  let savedTokens = 0;
  for (let i = 0; i < end; i++) {
    const message = messages[i]!;
    if (message.role === "assistant") for (const call of message.toolCalls ?? []) names.set(call.id, call);
    if (message.role !== "tool" || skip.has(i)) continue;
    const text = typeof message.content === "string" ? message.content : message.content.map((p) => (p.type === "text" ? p.text : "")).join("\n");
    const call = names.get(message.toolCallId);
    const stubTokens = MESSAGE_OVERHEAD_TOKENS + estimateTextTokens(prunedToolStub(call?.name ?? "the tool", call?.arguments ?? "", text));
    const saving = estimateMessageTokens(message) - stubTokens;
    if (saving < MIN_PRUNE_SAVING_TOKENS) continue;
    indexes.push(i);
    savedTokens += saving;
  }
  return { indexes, savedTokens };
}

/**
 * pruneToolOutputs() over stored rows: the ids of the tool rows to add to `state.pruned`.
 * Measures the rows as the model sees them now (already-pruned rows as their stubs).
 */
export function pruneToolRows(rows: readonly HistoryRow[], state: CompactionState, keepRecentTokens: number): { ids: string[]; savedTokens: number } {
  const visible = visibleRows(rows, state);
  const calls = toolCallIndex(visible);
  const shown: HistoryRow[] = [];
  const messages: LlmMessage[] = [];
  const skip = new Set<number>();
  for (const row of visible) {
    const message = viewMessage(row, state, calls);
    if (!message) continue;
    if (state.pruned.has(row.id)) skip.add(messages.length);
    shown.push(row);
    messages.push(message);
  }
  const result = pruneToolOutputs(messages, keepRecentTokens, skip);
  return { ids: result.indexes.map((i) => shown[i]!.id), savedTokens: result.savedTokens };
}
