/**
 * OpenAI chat-completions provider over node:http (see http-transport.ts) + our own SSE parser.
 *
 * Why not the `openai` SDK: we need (1) timeouts to the first byte and between chunks, which
 * the SDK's whole-request timeout cannot express; (2) raw access to non-standard fields
 * (`reasoning`, `reasoning_content`, `cache_write_tokens`, in-stream `{error}` objects)
 * that the SDK's types hide; (3) exact control over error classification and no hidden
 * retry layer. The parser is ~60 lines, the rest is mapping we would write anyway.
 */
import type { ProviderConfig } from "../../config/types.js";
import { providerTimeouts, type ProviderTimeouts } from "../../config/defaults.js";
import type { LlmError, LlmProvider, LlmRequest, StreamEvent } from "../types.js";
import { unsetKeyMessage, unsetKeyVariable } from "../models.js";
import { emptyStream, httpError, inStreamError, networkError, parseRetryAfter, unreadableChunk } from "./errors.js";
import { ChunkAccumulator } from "./from-wire.js";
import { SseParser } from "./sse-parser.js";
import { reasoningStyleFor } from "./reasoning.js";
import { nodeHttpTransport, type HttpAnswer, type HttpTransport } from "./http-transport.js";
import { SilenceTimer, timedChunks, timedText } from "./silence.js";
import { requestBody, type WireDialect } from "./to-wire.js";
import { structuredOutputFor } from "./response-format.js";

export interface OpenAiProviderOptions {
  env: Record<string, string | undefined>;
  /** default: node:http with keep-alive agents of this provider's own */
  transport?: HttpTransport;
  /** Wall clock for HTTP-date Retry-After. default: Date.now */
  now?: () => number;
}

export function createOpenAiProvider(name: string, config: ProviderConfig, options: OpenAiProviderOptions): LlmProvider {
  const settings: StreamSettings = {
    name,
    url: `${config.baseUrl.replace(/\/+$/, "")}/chat/completions`,
    config,
    env: options.env,
    transport: options.transport ?? nodeHttpTransport(),
    timeouts: providerTimeouts(config),
    now: options.now ?? Date.now,
    dialect: { style: reasoningStyleFor(config), structuredOutput: structuredOutputFor(config) },
  };
  return { name, stream: (request) => streamChat(settings, request) };
}

interface StreamSettings {
  name: string;
  url: string;
  config: ProviderConfig;
  env: Record<string, string | undefined>;
  transport: HttpTransport;
  timeouts: ProviderTimeouts;
  now: () => number;
  dialect: WireDialect;
}

/** The API key from config.apiKey or env[config.apiKeyEnv]; `missing` says what to set when apiKeyEnv names an unset variable. */
function apiKey(s: StreamSettings, model: string): { key?: string; missing?: string } {
  const variable = unsetKeyVariable(s.config, s.env);
  if (variable) return { missing: `model "${model}" goes to ${unsetKeyMessage(s.name, variable)}` };
  return { key: s.config.apiKey || (s.config.apiKeyEnv ? s.env[s.config.apiKeyEnv] : undefined) };
}

/** The setting that bounds each silence, named in a timeout's message. */
const SETTING_OF = { "first byte": "firstByteTimeoutMs", "between chunks": "idleTimeoutMs" } as const;

async function* streamChat(s: StreamSettings, request: LlmRequest): AsyncGenerator<StreamEvent> {
  const acc = new ChunkAccumulator();
  const fail = (error: LlmError): StreamEvent => ({ type: "error", error, partial: acc.message(), usage: acc.usage(), model: request.model });
  const cancelled = (): StreamEvent => fail({ code: "CANCELLED", message: `${s.name}: request cancelled`, retryable: false });

  if (request.signal?.aborted) return yield cancelled();
  const auth = apiKey(s, request.model);
  // Veil's configuration, not the provider, is at fault: nothing is sent.
  if (auth.missing) return yield fail({ code: "CONFIG_ERROR", message: auth.missing, retryable: false });

  const controller = new AbortController();
  const timer = new SilenceTimer(s.timeouts, () => controller.abort());
  const onAbort = () => controller.abort();
  request.signal?.addEventListener("abort", onAbort, { once: true });
  const thrown = (error: unknown): StreamEvent => {
    if (request.signal?.aborted) return cancelled();
    const phase = timer.expired;
    if (phase) {
      const waiting = phase === "first byte" ? "waiting for the first byte" : "between chunks";
      // A timeout is retried like a reset while nothing has streamed.
      return fail({ code: "TIMEOUT", message: `${s.name}: no data from model "${request.model}" for ${timer.limit(phase)} ms (${waiting}; ${SETTING_OF[phase]})`, retryable: !acc.produced });
    }
    return fail(networkError(s.name, request.model, error, acc.produced));
  };

  try {
    timer.startFirstByte();
    let response: HttpAnswer;
    try {
      request.onSending?.();
      response = await s.transport(s.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream, application/json",
          ...(auth.key ? { authorization: `Bearer ${auth.key}` } : {}),
          ...s.config.headers,
        },
        body: JSON.stringify(requestBody(request, s.dialect)),
        signal: controller.signal,
        ...(request.onSent ? { sent: request.onSent } : {}),
      });
    } catch (error) {
      return yield thrown(error);
    }

    if (response.status < 200 || response.status > 299) {
      let text = "";
      try {
        text = await timedText(response.body, timer);
      } catch (error) {
        if (request.signal?.aborted) return yield cancelled();
      }
      // Redirects are not followed (a POST would not survive most of them): say where to point baseUrl.
      const location = response.status >= 300 && response.status < 400 ? response.header("location") : null;
      if (location) text = `redirected to ${location}; set the provider's baseUrl to the new address`;
      return yield fail(httpError(s.name, request.model, response.status, text, parseRetryAfter(response, s.now())));
    }

    const contentType = response.header("content-type") ?? "";
    if (!contentType.includes("text/event-stream")) {
      // A server that ignored stream:true and answered with one JSON completion.
      let text: string;
      try {
        text = await timedText(response.body, timer);
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

    const decoder = new TextDecoder();
    const parser = new SseParser();
    let sawDone = false;
    let sawChunk = false;
    const chunks = timedChunks(response.body, timer);
    try {
      for (let ended = false; !ended && !sawDone; ) {
        const next = await chunks.next();
        ended = next.done === true;
        const payloads = ended ? parser.push(decoder.decode()).concat(parser.end()) : parser.push(decoder.decode(next.value, { stream: true }));
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
          sawChunk = true;
          for (const event of acc.apply(chunk)) yield event;
        }
      }
    } catch (error) {
      return yield thrown(error);
    } finally {
      await chunks.return(undefined);
    }
    if (request.signal?.aborted) return yield cancelled();
    if (!sawChunk) return yield fail(emptyStream(s.name, request.model));
    if (!sawDone && !acc.finishSeen) {
      return yield fail({
        code: "PROVIDER_ERROR",
        message: `${s.name}: stream from model "${request.model}" ended before the model finished`,
        retryable: !acc.produced,
      });
    }
    return yield done(acc, request.model);
  } finally {
    // No abort here: a body read to its end (or drained after [DONE]) leaves its keep-alive
    // connection to the next request; one cut short was destroyed by its reader.
    timer.stop();
    request.signal?.removeEventListener("abort", onAbort);
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
