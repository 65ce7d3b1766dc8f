import type { AgentConfig, CompactionSettings, Settings } from "../../config/types.js";

/** The compaction settings of one session, every field settled. */
export interface ResolvedCompaction {
  autoThreshold: number;
  keepRecentTokens: number;
  /** defaultCompaction.summarizerModel (agent > settings) > settings.summarizerModel > the session's model. */
  summarizerModel: string;
}

/** agent.json `compaction` over settings `defaultCompaction`, key by key. */
export function resolveCompaction(settings: Pick<Settings, "defaultCompaction" | "summarizerModel">, agent: Pick<AgentConfig, "compaction"> | undefined, sessionModel: string): ResolvedCompaction {
  const merged: CompactionSettings = { ...settings.defaultCompaction, ...stripUndefined(agent?.compaction ?? {}) };
  return {
    autoThreshold: merged.autoThreshold,
    keepRecentTokens: merged.keepRecentTokens,
    summarizerModel: merged.summarizerModel ?? settings.summarizerModel ?? sessionModel,
  };
}

/**
 * The share of the window the kept-recent messages may take at most, whatever
 * keepRecentTokens says: a 20,000-token keep on a 16k window would otherwise keep everything
 * and compaction could never shrink anything.
 */
export const MAX_KEEP_SHARE = 0.4;

/** keepRecentTokens bounded by MAX_KEEP_SHARE of the threshold's share of the window. */
export function effectiveKeepTokens(settings: Pick<ResolvedCompaction, "autoThreshold" | "keepRecentTokens">, contextWindow: number): number {
  return Math.max(0, Math.min(settings.keepRecentTokens, Math.floor(contextWindow * settings.autoThreshold * MAX_KEEP_SHARE)));
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
