import type { IdGenerator } from "../base/ids.js";
import type { Logger } from "../base/log.js";
import type { TokenUsage } from "../base/usage.js";
import type { ModelEntry, ModelInfo } from "../config/types.js";
import type { RunResult, StopReason } from "../engines/types.js";
import { costOf } from "../llm/cost.js";
import { modelInfo } from "../llm/models.js";
import type { LlmClient } from "../llm/types.js";
import { SessionContext } from "./compaction/session-context.js";
import type { RunRecorder } from "./recorder.js";
import { Resources } from "./resources.js";
import { BUDGET_RECHECK_MS, ChangeWatch, INBOX_RECHECK_MS } from "./change-watch.js";
import { forgetNestedInstructions } from "./instructions/nested.js";
import type { Clock } from "../base/clock.js";

export { ENGINE_STATE_KEY } from "./session-writer.js";

export interface ActiveRun {
  controller: AbortController;
  stopRequest: StopReason | null;
  done: Promise<RunResult>;
}

/** What this process holds of one open session between and during its runs. */
export interface LiveSession {
  resources: Resources;
  run: ActiveRun | null;
  /** The model's context across runs (compaction). */
  context: SessionContext;
  /** Undelivered inbox items known to this process, with their waiters. */
  pending: Map<string, { resolve: (r: RunResult) => void; perCall: { model?: string } }>;
  /** Waiters for messages drained into the current run. */
  consumed: ((r: RunResult) => void)[];
  /** Whether a boundary must read the inbox (arrivals seen since the last read). */
  inbox: ChangeWatch;
  /** Whether the loop must re-read the session's budget_override before a model call. */
  budget: ChangeWatch;
  closing: boolean;
}

export interface LiveSessionDeps {
  ids: IdGenerator;
  log: Logger;
  llm: LlmClient;
  clock: Pick<Clock, "monotonic">;
}

/** USD of one call at models.json prices of the model that answered (null: no price). */
export function priceOf(models: Record<string, ModelEntry>, usage: TokenUsage, modelKey: string): number | null {
  return costOf(usage, modelInfo(modelKey, models).cost);
}

/**
 * priceOf for one run: each model's price is looked up once (the catalogue's search by name
 * segments ran twice per model call otherwise: the recorder's cost and telemetry's).
 */
export function runPricer(models: Record<string, ModelEntry>): (usage: TokenUsage, modelKey: string) => number | null {
  const prices = new Map<string, ModelInfo["cost"]>();
  return (usage, modelKey) => {
    let cost = prices.get(modelKey);
    if (cost === undefined && !prices.has(modelKey)) prices.set(modelKey, (cost = modelInfo(modelKey, models).cost));
    return costOf(usage, cost);
  };
}

export function createLiveSession(id: string, deps: LiveSessionDeps): LiveSession {
  const { ids, log, llm } = deps;
  const resources = new Resources();
  return {
    resources,
    run: null,
    pending: new Map(),
    consumed: [],
    inbox: new ChangeWatch(deps.clock, INBOX_RECHECK_MS),
    budget: new ChangeWatch(deps.clock, BUDGET_RECHECK_MS),
    closing: false,
    context: new SessionContext({
      sessionId: id,
      ids,
      log,
      llm,
      // The results that carried nested AGENTS.md files may be gone: they are given again.
      afterCompaction: (store) => forgetNestedInstructions(resources, store, id),
    }),
  };
}

/**
 * The run ended: a manual compaction asked for during it that saw no boundary happens now,
 * while the run still holds the session; then the context and the recorder let go of it.
 */
export async function settleRunContext(id: string, live: LiveSession, recorder: RunRecorder, log: Logger): Promise<void> {
  // A run cut between a model call and its assistant step still counts that call's tokens.
  await recorder.storeSpend().catch((error) => log.warn("could not store the last call's usage", { sessionId: id, error: String(error) }));
  try {
    await live.context.settle();
  } catch (error) {
    log.warn("compaction at the end of the run failed", { sessionId: id, error: String(error) });
  } finally {
    live.context.end();
  }
}
