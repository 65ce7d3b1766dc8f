/**
 * OpenAI chat-completions provider over `fetch` + our own SSE parser.
 *
 * Why not the `openai` SDK: we need (1) an idle timeout measured between chunks, which the
 * SDK's whole-request timeout cannot express; (2) raw access to non-standard fields
 * (`reasoning`, `reasoning_content`, `cache_write_tokens`, in-stream `{error}` objects)
 * that the SDK's types hide; (3) exact control over error classification and no hidden
 * retry layer. The parser is ~60 lines, the rest is mapping we would write anyway.
 */
import type { ProviderConfig, ReasoningStyle } from "../../config/types.js";
import type { LlmError, LlmProvider, LlmRequest, StreamEvent } from "../types.js";
import { httpError, inStreamError, networkError, parseRetryAfter, unreadableChunk } from "./errors.js";
import { ChunkAccumulator } from "./from-wire.js";
import { SseParser } from "./sse-parser.js";
import { reasoningStyleFor } from "./reasoning.js";
import { toWireRequest } from "./to-wire.js";

export const DEFAULT_PROVIDER_TIMEOUT_MS = 120_000;

export interface OpenAiProviderOptions {
  env: Record<string, string | undefined>;
  fetch?: typeof fetch;
  /** Idle timeout: to the first byte and between chunks. default: config.timeoutMs ?? 120000 */
  timeoutMs?: number;
  /** Wall clock for HTTP-date Retry-After. default: Date.now */
  now?: () => number;
}

export function createOpenAiProvider(name: string, config: ProviderConfig, options: OpenAiProviderOptions): LlmProvider {
  const settings: StreamSettings = {
    name,
    url: `${config.baseUrl.replace(/\/+$/, "")}/chat/completions`,
    config,
    env: options.env,
    fetch: options.fetch ?? globalThis.fetch,
    timeoutMs: options.timeoutMs ?? config.timeoutMs ?? DEFAULT_PROVIDER_TIMEOUT_MS,
    now: options.now ?? Date.now,
    reasoningStyle: reasoningStyleFor(config),
  };
  return { name, stream: (request) => streamChat(settings, request) };
}

interface StreamSettings {
  name: string;
  url: string;
  config: ProviderConfig;
  env: Record<string, string | undefined>;
  fetch: typeof fetch;
  timeoutMs: number;
  now: () => number;
  reasoningStyle: ReasoningStyle;
}

/** The API key from config.apiKey or env[config.apiKeyEnv]; an Error message when it is missing. */
function apiKey(s: StreamSettings): { key?: string; missing?: string } {
  if (s.config.apiKey) return { key: s.config.apiKey };
  if (s.config.apiKeyEnv) {
    const key = s.env[s.config.apiKeyEnv];
    if (!key) return { missing: `${s.name}: environment variable ${s.config.apiKeyEnv} (apiKeyEnv) is not set` };
    return { key };
  }
  return {};
}

async function* streamChat(s: StreamSettings, request: LlmRequest): AsyncGenerator<StreamEvent> {
  const acc = new ChunkAccumulator();
  const fail = (error: LlmError): StreamEvent => ({ type: "error", error, partial: acc.message(), usage: acc.usage(), model: request.model });
  const cancelled = (): StreamEvent => fail({ code: "CANCELLED", message: `${s.name}: request cancelled`, retryable: false });

  if (request.signal?.aborted) return yield cancelled();
  const auth = apiKey(s);
  if (auth.missing) return yield fail({ code: "UNAUTHORIZED", message: auth.missing, retryable: false });

  const controller = new AbortController();
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, s.timeoutMs);
  };
  const onAbort = () => controller.abort();
  request.signal?.addEventListener("abort", onAbort, { once: true });
  const thrown = (error: unknown): StreamEvent => {
    if (request.signal?.aborted) return cancelled();
    if (timedOut) {
      const phase = acc.produced ? "between chunks" : "waiting for the first byte";
      return fail({ code: "TIMEOUT", message: `${s.name}: no data from model "${request.model}" for ${s.timeoutMs} ms (${phase})`, retryable: !acc.produced });
    }
    return fail(networkError(s.name, request.model, error, acc.produced));
  };

  try {
    arm();
    let response: Response;
    try {
      response = await s.fetch(s.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream, application/json",
          ...(auth.key ? { authorization: `Bearer ${auth.key}` } : {}),
          ...s.config.headers,
        },
        body: JSON.stringify(toWireRequest(request, true, s.reasoningStyle)),
        signal: controller.signal,
      });
    } catch (error) {
      return yield thrown(error);
    }

    if (!response.ok) {
      let text = "";
      try {
        text = await response.text();
      } catch (error) {
        if (request.signal?.aborted) return yield cancelled();
      }
      return yield fail(httpError(s.name, request.model, response.status, text, parseRetryAfter(response.headers, s.now())));
    }

    const contentType = response.headers.get("content-type") ?? "";
    if (!contentType.includes("text/event-stream") || !response.body) {
      // A server that ignored stream:true and answered with one JSON completion.
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        return yield thrown(error);
      }
      let body: Record<string, any>;
      try {
        body = JSON.parse(text);
      } catch {
        return yield fail({ code: "PROVIDER_ERROR", message: `${s.name}: unreadable response (${contentType || "no content type"}): ${text.slice(0, 200)}`, retryable: true });
      }
      if (body.error) return yield fail(inStreamError(s.name, request.model, body.error, false));
      for (const event of acc.apply(body)) yield event;
      return yield done(acc, request.model);
    }

    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser();
    let sawDone = false;
    try {
      for (;;) {
        arm();
        const { done: ended, value } = await reader.read();
        clearTimeout(timer); // the consumer's time between chunks is not the provider's
        const payloads = ended ? parser.push(decoder.decode()).concat(parser.end()) : parser.push(decoder.decode(value, { stream: true }));
        for (const payload of payloads) {
          const data = payload.trim();
          if (data === "") continue; // an empty data line: a keep-alive
          if (data === "[DONE]") {
            sawDone = true;
            break;
          }
          const chunk = parseChunk(data);
          // Whatever it held (text, a tool call's arguments, the finish) is lost: an answer
          // without it would pass for complete.
          if (!chunk) return yield fail(unreadableChunk(s.name, request.model, data, acc.produced));
          if (chunk.error) return yield fail(inStreamError(s.name, request.model, chunk.error, acc.produced));
          for (const event of acc.apply(chunk)) yield event;
        }
        if (sawDone || ended) break;
      }
    } catch (error) {
      return yield thrown(error);
    } finally {
      clearTimeout(timer);
      reader.cancel().catch(() => undefined);
    }
    if (request.signal?.aborted) return yield cancelled();
    if (!sawDone && !acc.finishSeen) {
      return yield fail({
        code: "PROVIDER_ERROR",
        message: `${s.name}: stream from model "${request.model}" ended before the model finished`,
        retryable: !acc.produced,
      });
    }
    return yield done(acc, request.model);
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", onAbort);
    controller.abort();
  }
}

/** A data line's chunk: a JSON object, else undefined. */
function parseChunk(data: string): Record<string, any> | undefined {
  try {
    const value: unknown = JSON.parse(data);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, any>) : undefined;
  } catch {
    return undefined;
  }
}

function done(acc: ChunkAccumulator, model: string): StreamEvent {
  return { type: "done", message: acc.message(), finishReason: acc.finishReason(), usage: acc.usage(), model };
}
