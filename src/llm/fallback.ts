import type { ModelEntry, ProviderConfig, Settings } from "../config/types.js";
import type { Clock } from "../base/clock.js";
import { errorMessage, isVeilError } from "../errors.js";
import type { Logger } from "../base/log.js";
import { checkModelKeyReady, fallbackChain, resolveModelKey } from "./models.js";
import { zeroUsage } from "./openai-compatible/from-wire.js";
import { createOpenAiProvider } from "./openai-compatible/client.js";
import type { AssistantMessage, LlmClient, LlmError, LlmProvider, LlmRequest, StreamEvent } from "./types.js";

export type ProviderFactory = (name: string, config: ProviderConfig, env: Record<string, string | undefined>) => LlmProvider;

export interface LlmClientOptions {
  settings: Pick<Settings, "providers" | "defaultProvider" | "fallbackModels" | "retry">;
  models: Record<string, ModelEntry>;
  env: Record<string, string | undefined>;
  clock: Clock;
  log?: Logger;
  /** default: createOpenAiProvider */
  providerFactory?: ProviderFactory;
}

const OUTPUT_EVENTS = new Set<StreamEvent["type"]>(["text", "thinking", "tool_call_start", "tool_call_delta"]);

/**
 * The client the loop talks to. For each model of the fallback chain: stream; a retryable
 * failure before any output is retried with exponential backoff (Retry-After honoured,
 * both capped at retry.maxDelayMs), then the next model is tried. MODEL_NOT_FOUND moves on
 * at once, and so does a key that names no configured provider; a refused request (the
 * provider's 400, 401, 403), a provider whose key is not set (CONFIG_ERROR) and CANCELLED end
 * the call. Once output has been yielded an error is final (the caller already showed that output).
 */
export function createLlmClient(options: LlmClientOptions): LlmClient {
  const { settings, models, env, clock, log } = options;
  const factory: ProviderFactory = options.providerFactory ?? ((name, config, e) => createOpenAiProvider(name, config, { env: e }));
  const providers = new Map<string, LlmProvider>();
  const providerFor = (name: string, config: ProviderConfig): LlmProvider => {
    let provider = providers.get(name);
    if (!provider) {
      provider = factory(name, config, env);
      providers.set(name, provider);
    }
    return provider;
  };

  async function* stream(request: Omit<LlmRequest, "model"> & { modelKey: string }): AsyncGenerator<StreamEvent> {
    const { modelKey, ...rest } = request;
    const retry = settings.retry ?? { maxRetries: 2, baseDelayMs: 500, maxDelayMs: 30_000 };
    const chain = fallbackChain(modelKey, settings, models);
    let last: Extract<StreamEvent, { type: "error" }> | undefined;
    const failure = (error: LlmError, model: string): Extract<StreamEvent, { type: "error" }> => ({
      type: "error",
      error,
      partial: emptyMessage(),
      usage: zeroUsage(),
      model,
    });

    for (const key of chain) {
      let resolved;
      try {
        resolved = resolveModelKey(key, settings);
      } catch (error) {
        // A key no provider here serves (CONFIG_ERROR), or an empty one: a model this node cannot reach.
        last = failure({ code: isVeilError(error) && error.code === "CONFIG_ERROR" ? "CONFIG_ERROR" : "MODEL_NOT_FOUND", message: errorMessage(error), retryable: false }, key);
        log?.warn("llm model key does not resolve; trying the next model", { model: key, error: errorMessage(error) });
        continue;
      }
      const provider = providerFor(resolved.providerName, resolved.provider);

      for (let attempt = 0; ; attempt++) {
        if (rest.signal?.aborted) return yield failure({ code: "CANCELLED", message: "request cancelled", retryable: false }, key);
        yield { type: "start", model: key };
        let produced = false;
        let ended: Extract<StreamEvent, { type: "error" }> | undefined;
        try {
          for await (const event of provider.stream({ ...rest, model: resolved.modelId })) {
            if (event.type === "done") return yield { ...event, model: key };
            if (event.type === "error") {
              ended = { ...event, model: key };
              break;
            }
            if (event.type === "start") continue;
            if (OUTPUT_EVENTS.has(event.type)) produced = true;
            yield event;
          }
        } catch (error) {
          // Providers must not throw; a custom one might. Treat it like a failed attempt.
          ended = failure({ code: "LLM_ERROR", message: `${provider.name}: ${errorMessage(error)}`, retryable: !produced }, key);
        }
        ended ??= failure({ code: "LLM_ERROR", message: `${provider.name}: stream ended without done or error`, retryable: !produced }, key);
        last = ended;
        const { error } = ended;

        if (produced || rest.signal?.aborted) {
          return yield rest.signal?.aborted && error.code !== "CANCELLED" ? { ...ended, error: { ...error, code: "CANCELLED", retryable: false } } : ended;
        }
        if (endsTheCall(error)) return yield ended;
        if (error.code === "MODEL_NOT_FOUND" || !error.retryable || attempt >= retry.maxRetries) {
          const next = chain[chain.indexOf(key) + 1];
          log?.warn(next ? `llm model failed; trying the next model (${next})` : "llm model failed; no fallback model left", { model: key, code: error.code, message: error.message, attempts: attempt + 1 });
          break;
        }
        const delay = Math.min(error.retryAfterMs ?? retry.baseDelayMs * 2 ** attempt, retry.maxDelayMs);
        log?.info("llm retry", { model: key, code: error.code, attempt: attempt + 1, delayMs: delay });
        try {
          await clock.sleep(delay, rest.signal);
        } catch {
          return yield failure({ code: "CANCELLED", message: "request cancelled during retry backoff", retryable: false }, key);
        }
      }
    }
    if (!last) return yield failure({ code: "MODEL_NOT_FOUND", message: `no model to try for "${modelKey}"`, retryable: false }, modelKey);
    if (chain.length > 1) {
      return yield { ...last, error: { ...last.error, message: `all models failed (${chain.join(", ")}); last: ${last.error.message}` } };
    }
    return yield last;
  }

  return { stream, checkReady: (modelKey) => void checkModelKeyReady(modelKey, settings, env) };
}

/** Failures another attempt or model would only repeat, or that the caller chose. */
function endsTheCall(error: LlmError): boolean {
  return error.code === "CANCELLED" || error.code === "VALIDATION_ERROR" || error.code === "CONFIG_ERROR" || error.status === 401 || error.status === 403;
}

function emptyMessage(): AssistantMessage {
  return { content: null, thinking: null, toolCalls: [] };
}
