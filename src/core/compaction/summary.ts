import { VeilError } from "../../errors.js";
import type { LlmMessage } from "../../llm/types.js";
import { recentStart } from "./prune.js";
import { estimateTextTokens } from "./tokens.js";
import { buildModelView, toolCallIndex, viewMessage, visibleRows, type CompactionState, type HistoryRow } from "./view.js";

/** The fixed template of every summary. */
export const SUMMARY_SECTIONS = ["Goal", "Decisions and why", "Files read and changed", "Current state", "Open questions", "Next steps"] as const;

export const SUMMARY_SYSTEM_PROMPT = `You compact the history of an AI agent's working session. The agent will continue from your summary alone: the messages it replaces are no longer shown to it. Write the summary in Markdown with exactly these sections, in this order:

## Goal
What the user asked for, in their terms, with every constraint and preference they stated.

## Decisions and why
Choices made so far and the reason for each (including approaches tried and abandoned).

## Files read and changed
One path per line, marked read, created, modified or deleted, with what matters about it.

## Current state
What is done and verified, what is in progress, what fails (quote exact error messages that still matter).

## Open questions
What is unclear or waiting for the user; "None" if nothing.

## Next steps
A numbered list, the immediate next action first.

Rules: use only facts from the transcript (and the previous summary, if one is given: keep everything in it that the transcript does not supersede). Keep exact names, paths, commands, identifiers, numbers and URLs. Be dense; no preamble, no closing remarks, no tool calls.`;

/** Per-entry clipping in the transcript the summarizer reads. */
export const TRANSCRIPT_LIMITS = Object.freeze({ toolResultChars: 2000, messageChars: 8000, argumentsChars: 500 });

export interface SummarySplit {
  /** Rows the summary will stand for, oldest first (the last user request is not among them). */
  older: HistoryRow[];
  /** The kept-recent rows, verbatim, oldest first. */
  recent: HistoryRow[];
  /** The last user message, kept verbatim wherever it falls; null when there is none. */
  lastUserRequest: HistoryRow | null;
}

/**
 * Stage 2's cut: the kept-recent tail (keepRecentTokens, moved forward past tool results so
 * it never starts in the middle of a tool-call group), everything older to be summarised,
 * and the last user request pulled out of the older part to stay verbatim.
 */
export function splitForSummary(rows: readonly HistoryRow[], state: CompactionState, keepRecentTokens: number): SummarySplit {
  const visible = visibleRows(rows, state);
  const calls = toolCallIndex(visible);
  const shown: HistoryRow[] = [];
  const messages: LlmMessage[] = [];
  for (const row of visible) {
    const message = viewMessage(row, state, calls);
    if (!message) continue;
    shown.push(row);
    messages.push(message);
  }
  let start = recentStart(messages, keepRecentTokens);
  while (start < shown.length && shown[start]!.role === "tool") start++;
  const lastUserRequest = [...shown].reverse().find((row) => row.role === "user") ?? null;
  const older = shown.slice(0, start).filter((row) => row !== lastUserRequest);
  return { older, recent: shown.slice(start), lastUserRequest };
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.75);
  const tail = max - head;
  return `${text.slice(0, head)}\n[… ${text.length - max} chars left out …]\n${text.slice(-tail)}`;
}

/** One row of the summarizer's transcript. */
function transcriptEntry(row: HistoryRow, state: CompactionState, calls: ReturnType<typeof toolCallIndex>): string {
  const source = typeof row.meta?.source === "string" && row.meta.source !== "user" && row.meta.source !== "http" ? ` · ${row.meta.source}` : "";
  if (row.role === "tool") {
    const call = calls.get(row.tool_call_id ?? "");
    const message = viewMessage(row, state, calls);
    const body = message && typeof message.content === "string" ? message.content : (row.content ?? "");
    return `[tool result · ${call?.name ?? "tool"}]\n${clip(body, TRANSCRIPT_LIMITS.toolResultChars)}`;
  }
  const parts = [`[${row.role}${source}]`];
  if (row.content) parts.push(clip(row.content, TRANSCRIPT_LIMITS.messageChars));
  for (const call of row.tool_calls ?? []) parts.push(`[tool call · ${call.name}] ${clip(call.arguments, TRANSCRIPT_LIMITS.argumentsChars)}`);
  return parts.join("\n");
}

export interface SummaryRequestInput {
  split: SummarySplit;
  state: CompactionState;
  /** Rows of the session (for tool names of calls made before the older part). */
  rows: readonly HistoryRow[];
  /** Budget for the summarizer's prompt, tokens: e.g. half the summarizer model's window. */
  maxInputTokens: number;
}

/**
 * The summarizer's messages: the template as system prompt, then one user message with the
 * previous summary (if any), the transcript of the older rows (tool outputs clipped; the
 * oldest entries dropped first when it is over maxInputTokens) and the last user request.
 * Send it to the summarizer model with no tools.
 */
export function buildSummaryRequest(input: SummaryRequestInput): LlmMessage[] {
  const calls = toolCallIndex(input.rows);
  const entries = input.split.older.map((row) => transcriptEntry(row, input.state, calls));
  const fixed: string[] = [];
  if (input.state.summary) fixed.push(`<previous-summary>\n${input.state.summary.content.trim()}\n</previous-summary>`);
  const request = input.split.lastUserRequest?.content;
  const tail = request ? `<last-user-request>\n${clip(request, TRANSCRIPT_LIMITS.messageChars)}\n</last-user-request>\n\n` : "";
  let budget = input.maxInputTokens - estimateTextTokens(SUMMARY_SYSTEM_PROMPT) - estimateTextTokens(fixed.join("\n")) - estimateTextTokens(tail) - 200;
  const kept: string[] = [];
  for (let i = entries.length - 1; i >= 0; i--) {
    const cost = estimateTextTokens(entries[i]!) + 2;
    if (cost > budget) {
      kept.unshift(`[… ${i + 1} earlier messages left out …]`);
      break;
    }
    budget -= cost;
    kept.unshift(entries[i]!);
  }
  const user = `${fixed.join("\n\n")}${fixed.length ? "\n\n" : ""}<transcript>\n${kept.join("\n\n")}\n</transcript>\n\n${tail}Write the summary now, with the six sections.`;
  return [
    { role: "system", content: SUMMARY_SYSTEM_PROMPT },
    { role: "user", content: user },
  ];
}

export interface AppliedSummary {
  /** The state after the compaction; persist it as the summary row + the compacted flags. */
  state: CompactionState;
  /** Rows newly hidden behind the summary. */
  compactedIds: string[];
  /** The model's next view: system prompt + summary + last user request + recent messages. */
  view: LlmMessage[];
}

/**
 * Stage 2's result: the summary (stored as row `summaryRowId`, kind "summary") replaces the
 * older rows. Pruned marks of rows now compacted are dropped (the summary covers them).
 */
export function applySummary(input: { systemPrompt: string; sessionBrief?: string; rows: readonly HistoryRow[]; state: CompactionState; split: SummarySplit; summaryText: string; summaryRowId: string }): AppliedSummary {
  const text = input.summaryText.trim();
  if (!text) throw new VeilError("LLM_ERROR", "The summarizer model returned an empty summary; the history was left as it was.");
  const compactedIds = input.split.older.map((row) => row.id);
  const compacted = new Set([...input.state.compacted, ...compactedIds]);
  const pruned = new Set([...input.state.pruned].filter((id) => !compacted.has(id)));
  const state: CompactionState = { summary: { id: input.summaryRowId, content: text }, compacted, pruned };
  return { state, compactedIds, view: buildModelView(input.systemPrompt, input.rows, state, input.sessionBrief) };
}
