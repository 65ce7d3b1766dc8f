/**
 * The in-process LLM API custom tools call (their `callLLM` helper):
 * `callWithProviderFallback` and `extractMessage`. Same key resolution, retries and
 * fallback chain as the main loop; no budget accounting, nothing persisted.
 */
import { randomUUID } from "node:crypto";
import { defaultSettings } from "../config/defaults.js";
import type { ModelEntry, ReasoningConfig, Settings } from "../config/types.js";
import { systemClock, type Clock } from "../base/clock.js";
import { VeilError } from "../errors.js";
import type { Logger } from "../base/log.js";
import { fromWireMessages, fromWireTools, toChatCompletion, type ChatCompletion } from "./chat-completion.js";
import { createLlmClient, type ProviderFactory } from "./fallback.js";
import { pickModelKey } from "./models.js";
import { reportedError } from "./reported-error.js";

export interface CallWithProviderFallbackOptions {
  /** The loaded settings (`_settings`); missing parts fall back to the defaults. */
  settings: Partial<Settings> & Record<string, unknown>;
  /** Model key (`_modelKey`); default settings.defaultModel. */
  modelId?: string;
  /** OpenAI wire messages: `{ role, content, tool_calls?, tool_call_id? }`. */
  messages: unknown[];
  reasoning?: ReasoningConfig | null;
  /** OpenAI wire tools: `{ type: "function", function: { name, description, parameters } }`. */
  tools?: unknown[];
  /** Called with every text delta as it arrives. */
  onChunk?: (text: string) => void;
  signal?: AbortSignal;
  /** For apiKeyEnv. default: process.env */
  env?: Record<string, string | undefined>;
  /** Model catalogue (fallbacks). default: {} */
  models?: Record<string, ModelEntry>;
  maxTokens?: number;
  temperature?: number;
  clock?: Clock;
  log?: Logger;
  providerFactory?: ProviderFactory;
}

/**
 * One LLM call with the runtime's provider resolution and fallback chain.
 * Resolves `{ response }` (an OpenAI `chat.completion`); throws a VeilError on final failure.
 *
 * @example
 * const { response } = await callWithProviderFallback({ settings: _settings, modelId: _modelKey,
 *   messages: [{ role: "user", content: "Hi" }] });
 * const { content } = extractMessage(response);
 */
export async function callWithProviderFallback(options: CallWithProviderFallbackOptions): Promise<{ response: ChatCompletion; model: string }> {
  const defaults = defaultSettings();
  const given = options.settings ?? {};
  const settings: Settings = { ...defaults, ...given, retry: { ...defaults.retry, ...given.retry } } as Settings;
  const modelKey = pickModelKey({ perCall: options.modelId, settings });
  const clock = options.clock ?? systemClock;
  const client = createLlmClient({
    settings,
    models: options.models ?? {},
    env: options.env ?? process.env,
    clock,
    log: options.log,
    providerFactory: options.providerFactory,
  });
  const tools = fromWireTools(options.tools);
  const events = client.stream({
    modelKey,
    messages: fromWireMessages(options.messages),
    ...(tools && tools.length > 0 ? { tools } : {}),
    reasoning: options.reasoning ?? null,
    signal: options.signal,
    maxTokens: options.maxTokens,
    temperature: options.temperature,
  });
  for await (const event of events) {
    if (event.type === "text") options.onChunk?.(event.delta);
    else if (event.type === "done") {
      const meta = { id: `chatcmpl-${randomUUID()}`, model: event.model, created: Math.floor(clock.now() / 1000) };
      return { response: toChatCompletion(meta, event), model: event.model };
    } else if (event.type === "error") {
      const reported = reportedError(event.error);
      throw new VeilError(reported.code, reported.message, { details: { model: event.model, retryable: event.error.retryable, ...reported.details } });
    }
  }
  throw new VeilError("LLM_ERROR", "the LLM stream ended without a result");
}

export interface ExtractedMessage {
  content: string | null;
  thinkingContent: string | null;
  audio: unknown | null;
  toolCalls: unknown[];
  finishReason: string | null;
}

/** `{ content, thinkingContent, audio, toolCalls, finishReason }` of a chat.completion (nulls / [] when absent). */
export function extractMessage(response: unknown): ExtractedMessage {
  const choice = (response as { choices?: any[] } | null | undefined)?.choices?.[0];
  const message = choice?.message ?? {};
  const content =
    typeof message.content === "string"
      ? message.content
      : Array.isArray(message.content)
        ? message.content.map((p: any) => (typeof p?.text === "string" ? p.text : "")).join("")
        : null;
  const thinking = message.reasoning_content ?? message.reasoning ?? message.thinking_content ?? null;
  return {
    content,
    thinkingContent: typeof thinking === "string" ? thinking : null,
    audio: message.audio ?? null,
    toolCalls: Array.isArray(message.tool_calls) ? message.tool_calls : [],
    finishReason: typeof choice?.finish_reason === "string" ? choice.finish_reason : null,
  };
}
