import type { Budget } from "../config/types.js";
import type { TokenUsage } from "../store/store.js";

export const DEFAULT_MAX_ITERATIONS = 50;

export interface RunProgress {
  iterations: number;
  startedAt: number;
  now: number;
  sessionUsage: TokenUsage;
}

/** Why a run must stop before its next model call, or null to go on. */
export function budgetStop(budget: Budget, progress: RunProgress): "max_iterations" | "max_wall_seconds" | "max_tokens" | null {
  if (progress.iterations >= (budget.max_iterations ?? DEFAULT_MAX_ITERATIONS)) return "max_iterations";
  if (budget.max_wall_seconds !== undefined && progress.now - progress.startedAt >= budget.max_wall_seconds * 1000) return "max_wall_seconds";
  if (budget.max_tokens !== undefined && progress.sessionUsage.total_tokens >= budget.max_tokens) return "max_tokens";
  return null;
}

/** Session override > agent > settings, key by key. */
export function resolveBudget(settings: Budget, agent: Budget, override: Budget | null): Budget {
  return { ...settings, ...agent, ...(override ?? {}) };
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    cached_tokens: a.cached_tokens + b.cached_tokens,
    cache_creation_tokens: a.cache_creation_tokens + b.cache_creation_tokens,
    reasoning_tokens: a.reasoning_tokens + b.reasoning_tokens,
  };
}

/**
 * The full prompt window of one call. prompt_tokens follows OpenAI's meaning
 * (it already includes cache reads and writes), so window = prompt + output.
 * Engines whose wire splits them (Anthropic) fold cache tokens into prompt_tokens.
 */
export function contextSize(usage: TokenUsage): number {
  return usage.prompt_tokens + usage.completion_tokens;
}
