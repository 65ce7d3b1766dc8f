import type { LlmMessage } from "../../llm/types.js";
import { overflowSizes } from "./overflow.js";
import { compactionPlan, type CompactionReason } from "./plan.js";
import { pruneToolRows } from "./prune.js";
import { effectiveKeepTokens, type ResolvedCompaction } from "./settings.js";
import { applySummary, buildSummaryRequest, splitForSummary } from "./summary.js";
import { estimateMessagesTokens } from "./tokens.js";
import { buildModelView, type CompactionState, type HistoryRow } from "./view.js";

export interface CompactInput {
  reason: CompactionReason;
  systemPrompt: string;
  /** See RunRequest.sessionBrief. */
  sessionBrief?: string;
  rows: readonly HistoryRow[];
  state: CompactionState;
  contextWindow: number;
  settings: Pick<ResolvedCompaction, "autoThreshold" | "keepRecentTokens">;
  /** The context now: the session's context_size when known; default: an estimate of the view. */
  contextTokens?: number;
  /** Sends the messages to the summarizer model (no tools) and answers its text. */
  summarize(messages: LlmMessage[]): Promise<string>;
  /** Id for the summary row, if one is made. */
  summaryRowId: string;
  /** The summarizer model's window. default: contextWindow */
  summarizerWindow?: number;
  /**
   * For reason "overflow": the provider's error text. When it names the window (a local
   * server loaded with a smaller context than models.json says) or the prompt size, those
   * figures are used instead of ours.
   */
  overflowMessage?: string;
}

export interface CompactResult {
  /** The new state: persist the flags and the summary row, then build views from it. */
  state: CompactionState;
  tokensBefore: number;
  /** Estimated size of the view after compaction. */
  tokensAfter: number;
  /** Tool rows newly shown as stubs. */
  prunedIds: string[];
  /** Rows newly hidden behind the summary. */
  compactedIds: string[];
  /** The summary made this time (id = summaryRowId), or null. */
  summary: { id: string; content: string } | null;
  /** Why stage 2 did not happen although planned (the summarizer failed); stage 1 still applies. */
  summaryError?: unknown;
}

/**
 * A manual compaction runs both stages whatever the size, so on a history
 * that fits in keepRecentTokens it keeps at most this share of the context verbatim;
 * otherwise a small session would have nothing older to prune or summarise.
 */
export const MANUAL_KEEP_SHARE = 0.25;

function keepTokensFor(reason: CompactionReason, keep: number, tokensBefore: number): number {
  return reason === "manual" ? Math.min(keep, Math.floor(tokensBefore * MANUAL_KEEP_SHARE)) : keep;
}

/**
 * One compaction, both stages as compactionPlan() decides: prune old tool outputs, then
 * summarise the older history if still over. Never deletes anything: the result is a new
 * state to persist next to the rows. The summarizer's failure leaves stage 1 in place.
 */
export async function compactHistory(input: CompactInput): Promise<CompactResult> {
  const told = input.overflowMessage ? overflowSizes(input.overflowMessage) : {};
  const contextWindow = Math.min(input.contextWindow, told.limit ?? Number.POSITIVE_INFINITY);
  const tokensBefore = told.prompt ?? input.contextTokens ?? estimateMessagesTokens(buildModelView(input.systemPrompt, input.rows, input.state, input.sessionBrief));
  const keep = keepTokensFor(input.reason, effectiveKeepTokens(input.settings, contextWindow), tokensBefore);
  const pruning = pruneToolRows(input.rows, input.state, keep);
  const pruned: CompactionState = { ...input.state, pruned: new Set([...input.state.pruned, ...pruning.ids]) };
  // Measured again after stage 1, so a manual compaction still finds something older to summarise.
  const splitKeep = input.reason === "manual" ? keepTokensFor("manual", keep, estimateMessagesTokens(buildModelView(input.systemPrompt, input.rows, pruned, input.sessionBrief))) : keep;
  const split = splitForSummary(input.rows, pruned, splitKeep);
  const plan = compactionPlan({
    reason: input.reason,
    contextTokens: tokensBefore,
    contextWindow,
    autoThreshold: input.settings.autoThreshold,
    prunableTokens: pruning.savedTokens,
    summarizable: split.older.length > 0,
  });
  let state = plan.prune ? pruned : input.state;
  const prunedIds = plan.prune ? pruning.ids : [];
  let compactedIds: string[] = [];
  let summary: CompactResult["summary"] = null;
  let summaryError: unknown;
  if (plan.summarize) {
    try {
      const request = buildSummaryRequest({ split, state, rows: input.rows, maxInputTokens: Math.floor((input.summarizerWindow ?? contextWindow) * 0.6) });
      const summaryText = await input.summarize(request);
      const applied = applySummary({ systemPrompt: input.systemPrompt, sessionBrief: input.sessionBrief, rows: input.rows, state, split, summaryText, summaryRowId: input.summaryRowId });
      state = applied.state;
      compactedIds = applied.compactedIds;
      summary = applied.state.summary;
    } catch (error) {
      summaryError = error;
    }
  }
  const tokensAfter = estimateMessagesTokens(buildModelView(input.systemPrompt, input.rows, state, input.sessionBrief));
  return { state, tokensBefore, tokensAfter, prunedIds, compactedIds, summary, ...(summaryError !== undefined ? { summaryError } : {}) };
}
