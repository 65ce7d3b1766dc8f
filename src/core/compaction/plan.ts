/**
 * When to compact and how far. Pure arithmetic, cheap enough to run after every model call.
 */

export type CompactionReason = "auto" | "manual" | "overflow";

/**
 * Compact before the next model call when the context after this one is at or
 * above autoThreshold × context_window. `contextSize` is the session's context_size (the
 * provider's prompt + completion tokens of the last call, see tokens.contextTokens()).
 */
export function shouldCompact(contextSize: number, contextWindow: number, autoThreshold: number): boolean {
  return contextSize >= autoThreshold * contextWindow;
}

/**
 * After a compaction the context should sit this far below the threshold (as a fraction of
 * the threshold), so the next few tool results do not trigger another round at once: each
 * round rewrites the prompt's prefix and costs the provider's prompt cache.
 */
export const HEADROOM = 0.8;

export interface PlanInput {
  reason: CompactionReason;
  /** The context now, tokens. */
  contextTokens: number;
  contextWindow: number;
  autoThreshold: number;
  /** What stage 1 would save (pruneToolOutputs().savedTokens). */
  prunableTokens: number;
  /** True when there are messages older than the kept-recent ones to summarise. */
  summarizable: boolean;
}

export interface CompactionPlan {
  prune: boolean;
  summarize: boolean;
  /** The size the plan aims at, tokens. */
  targetTokens: number;
}

/**
 * Stage 1 (prune old tool outputs) always runs when it saves anything; stage 2 (summary)
 * runs when stage 1 does not bring the context under HEADROOM × threshold × window, and
 * always for a manual compaction ("both stages whatever the size") and after an overflow
 * (the provider's count beat our estimate, so ours cannot be trusted to say "enough").
 */
export function compactionPlan(input: PlanInput): CompactionPlan {
  const targetTokens = Math.floor(input.autoThreshold * input.contextWindow * HEADROOM);
  const prune = input.prunableTokens > 0;
  const afterPrune = input.contextTokens - Math.max(0, input.prunableTokens);
  const wantSummary = input.reason !== "auto" || afterPrune > targetTokens;
  return { prune, summarize: wantSummary && input.summarizable, targetTokens };
}
