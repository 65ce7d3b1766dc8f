/** Token counts of one model call or a running total (OpenAI names; cache fields are Veil's). */
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens: number;
  cache_creation_tokens: number;
  reasoning_tokens: number;
}

export const ZERO_USAGE: TokenUsage = Object.freeze({
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  cached_tokens: 0,
  cache_creation_tokens: 0,
  reasoning_tokens: 0,
});

export type SessionStatus = "idle" | "running" | "suspended" | "closed";
