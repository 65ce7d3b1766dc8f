import type { ProviderConfig, ReasoningConfig, ReasoningEffort, ReasoningStyle } from "../../config/types.js";
import { providerHost } from "./provider-host.js";

/**
 * Reasoning on the chat-completions wire. One provider setting, `reasoning`,
 * names the dialect; by default OpenRouter hosts get "openrouter" and everything else
 * "openai" (vLLM, llama.cpp, Ollama, LM Studio, DeepSeek, Kimi… all read `reasoning_effort`).
 */
export function reasoningStyleFor(provider: Pick<ProviderConfig, "baseUrl" | "reasoning">): ReasoningStyle {
  if (provider.reasoning) return provider.reasoning;
  const host = providerHost(provider.baseUrl);
  return host === "openrouter.ai" || host.endsWith(".openrouter.ai") ? "openrouter" : "openai";
}

/**
 * Thinking budgets for the "anthropic" style when the caller gives an effort but no
 * max_tokens. Anthropic's floor is 1,024; the steps roughly double, like the efforts do.
 */
export const ANTHROPIC_THINKING_BUDGETS: Readonly<Record<Exclude<ReasoningEffort, "none">, number>> = Object.freeze({
  minimal: 1024,
  low: 4096,
  medium: 16_384,
  high: 32_768,
  xhigh: 65_536,
});
const ANTHROPIC_MIN_BUDGET = 1024;

/** The request fields reasoning adds; the keys are exactly what goes into the body. */
export interface WireReasoningFields {
  reasoning_effort?: string;
  reasoning?: { effort?: string; max_tokens?: number };
  thinking?: { type: "enabled"; budget_tokens: number };
}

/**
 * Reasoning settings → request fields for a style:
 * - "openai": `reasoning_effort: effort` (effort "none" or absent omits it; OpenAI has no budget field).
 * - "openrouter": `reasoning: { max_tokens }` when max_tokens is given, else `{ effort }` — OpenRouter
 *   takes one of the two, not both; effort "none" is sent as `{ effort: "none" }` (reasoning off).
 * - "anthropic": `thinking: { type: "enabled", budget_tokens }`, the budget being max_tokens or the
 *   effort's entry in ANTHROPIC_THINKING_BUDGETS, kept below the request's max_tokens as Anthropic
 *   requires; effort "none" (or a request too small for the 1,024 floor) omits it.
 * - "none": nothing.
 */
export function reasoningFields(reasoning: ReasoningConfig | null | undefined, style: ReasoningStyle, requestMaxTokens?: number): WireReasoningFields {
  if (!reasoning || (reasoning.effort === undefined && reasoning.max_tokens === undefined)) return {};
  const { effort, max_tokens: budget } = reasoning;
  switch (style) {
    case "openai":
      return effort && effort !== "none" ? { reasoning_effort: effort } : {};
    case "openrouter":
      if (effort === "none") return { reasoning: { effort: "none" } };
      return budget !== undefined ? { reasoning: { max_tokens: budget } } : { reasoning: { effort } };
    case "anthropic": {
      if (effort === "none") return {};
      let tokens = budget ?? ANTHROPIC_THINKING_BUDGETS[effort ?? "medium"] ?? ANTHROPIC_THINKING_BUDGETS.medium;
      if (requestMaxTokens !== undefined) tokens = Math.min(tokens, requestMaxTokens - 1);
      return tokens >= ANTHROPIC_MIN_BUDGET ? { thinking: { type: "enabled", budget_tokens: tokens } } : {};
    }
    case "none":
      return {};
  }
}

/**
 * Where the stored thinking of an assistant message goes when the history is sent back, or
 * null when it stays out. Only assistant messages with tool calls carry it: DeepSeek's
 * thinking mode (and Kimi's) answer 400 when a tool-calling turn comes back without its
 * `reasoning_content`, ignore it on plain answers, and the older deepseek-reasoner (no tool
 * calls) rejects it anywhere — so tool-call messages are exactly the ones that need it.
 * OpenRouter reads the same text back from `reasoning`. Anthropic's thinking blocks need
 * signatures the chat-completions wire never gives us, so that style sends none.
 */
export function thinkingEchoField(style: ReasoningStyle): "reasoning_content" | "reasoning" | null {
  if (style === "openai") return "reasoning_content";
  if (style === "openrouter") return "reasoning";
  return null;
}
