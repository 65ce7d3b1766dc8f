import type { TokenUsage } from "../base/usage.js";
import type { ModelCost } from "../config/types.js";

const PER_MILLION = 1_000_000;

/**
 * USD of one model call (or a running total) at models.json `cost` prices (USD per million
 * tokens), each prompt token counted once at its own price:
 *
 *   (prompt − cached − cache writes) × input + cached × cache_read
 *     + cache writes × cache_write + completion × output
 *
 * `prompt_tokens` on the OpenAI wire already includes cache reads and writes (OpenAI,
 * OpenRouter, Anthropic's compatible endpoint), so both are taken out of the input share;
 * with no cache writes this is the contract's formula term for term. Reasoning tokens are
 * part of `completion_tokens` and cost the output price. An absent cache price falls back to
 * the input price. Null when the model has no `cost` entry.
 */
export function costOf(usage: TokenUsage, cost: ModelCost | undefined | null): number | null {
  if (!cost) return null;
  const cached = Math.max(0, usage.cached_tokens);
  const written = Math.max(0, usage.cache_creation_tokens);
  const uncached = Math.max(0, usage.prompt_tokens - cached - written);
  const usd =
    uncached * cost.input +
    cached * (cost.cache_read ?? cost.input) +
    written * (cost.cache_write ?? cost.input) +
    Math.max(0, usage.completion_tokens) * cost.output;
  return usd / PER_MILLION;
}

/** Adds a call's cost to a total where either may be unknown (null stays null only when both are). */
export function addCost(total: number | null, call: number | null): number | null {
  if (call === null) return total;
  return (total ?? 0) + call;
}
