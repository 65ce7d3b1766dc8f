/**
 * OpenAI chat-completion shapes at our public edges: the `/v1/chat/completions`
 * passthrough and `callWithProviderFallback`. Converts wire messages in, and our stream
 * events out as `chat.completion` / `chat.completion.chunk` objects.
 */
import { VeilError } from "../errors.js";
import type { TokenUsage } from "../store/store.js";
import type { AssistantMessage, ContentPart, FinishReason, LlmError, LlmMessage, LlmToolSpec, StreamEvent } from "./types.js";

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; cache_write_tokens?: number };
  completion_tokens_details: { reasoning_tokens: number };
}

export interface ChatCompletionToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: {
    index: 0;
    message: { role: "assistant"; content: string | null; reasoning_content: string | null; tool_calls?: ChatCompletionToolCall[] };
    finish_reason: FinishReason;
  }[];
  usage: WireUsage;
}

export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: { index: 0; delta: Record<string, unknown>; finish_reason: FinishReason | null }[];
  usage?: WireUsage;
  /** Set on the last chunk when the call failed (OpenRouter style). */
  error?: { code: LlmError["code"]; message: string };
}

export interface CompletionMeta {
  id: string;
  model: string;
  /** Unix seconds. */
  created: number;
}

export function toWireUsage(usage: TokenUsage): WireUsage {
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
    prompt_tokens_details: {
      cached_tokens: usage.cached_tokens,
      ...(usage.cache_creation_tokens ? { cache_write_tokens: usage.cache_creation_tokens } : {}),
    },
    completion_tokens_details: { reasoning_tokens: usage.reasoning_tokens },
  };
}

/** A finished assistant message → `chat.completion`. */
export function toChatCompletion(
  meta: CompletionMeta,
  result: { message: AssistantMessage; finishReason: FinishReason; usage: TokenUsage },
): ChatCompletion {
  const message: ChatCompletion["choices"][0]["message"] = {
    role: "assistant",
    content: result.message.content,
    reasoning_content: result.message.thinking,
  };
  if (result.message.toolCalls.length > 0) {
    message.tool_calls = result.message.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
  }
  return {
    id: meta.id,
    object: "chat.completion",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, message, finish_reason: result.finishReason }],
    usage: toWireUsage(result.usage),
  };
}

/**
 * Stateful event → chunk encoder. The first content event is preceded by a role chunk;
 * `done` yields a finish chunk and a usage chunk; `error` yields one chunk with `error`.
 * The caller writes `data: [DONE]` after the last chunk.
 */
export function createChunkEncoder(meta: CompletionMeta): { encode(event: StreamEvent): ChatCompletionChunk[] } {
  let started = false;
  const chunk = (delta: Record<string, unknown>, finish: FinishReason | null = null): ChatCompletionChunk => ({
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const empty = (): ChatCompletionChunk => ({ id: meta.id, object: "chat.completion.chunk", created: meta.created, model: meta.model, choices: [] });
  return {
    encode(event) {
      const out: ChatCompletionChunk[] = [];
      if (!started && event.type !== "start") {
        started = true;
        out.push(chunk({ role: "assistant", content: "" }));
      }
      switch (event.type) {
        case "start":
          break;
        case "text":
          out.push(chunk({ content: event.delta }));
          break;
        case "thinking":
          out.push(chunk({ reasoning_content: event.delta }));
          break;
        case "tool_call_start":
          out.push(chunk({ tool_calls: [{ index: event.index, id: event.id, type: "function", function: { name: event.name, arguments: "" } }] }));
          break;
        case "tool_call_delta":
          out.push(chunk({ tool_calls: [{ index: event.index, function: { arguments: event.argumentsDelta } }] }));
          break;
        case "done":
          out.push(chunk({}, event.finishReason), { ...empty(), usage: toWireUsage(event.usage) });
          break;
        case "error":
          out.push({ ...empty(), usage: toWireUsage(event.usage), error: { code: event.error.code, message: event.error.message } });
          break;
      }
      return out;
    },
  };
}

/** Our stream → `chat.completion.chunk` objects, in order. */
export async function* toChatCompletionChunks(events: AsyncIterable<StreamEvent>, meta: CompletionMeta): AsyncGenerator<ChatCompletionChunk> {
  const encoder = createChunkEncoder(meta);
  for await (const event of events) yield* encoder.encode(event);
}

/** OpenAI wire messages (role/content/tool_calls/tool_call_id) → LlmMessage. Throws VALIDATION_ERROR on bad shapes. */
export function fromWireMessages(messages: unknown): LlmMessage[] {
  if (!Array.isArray(messages)) throw new VeilError("VALIDATION_ERROR", "messages must be an array");
  return messages.map((raw, i) => {
    if (!raw || typeof raw !== "object") throw new VeilError("VALIDATION_ERROR", `messages[${i}] must be an object`);
    const m = raw as Record<string, any>;
    switch (m.role) {
      case "system":
      case "developer":
        return { role: "system", content: textOf(m.content) };
      case "user":
        return { role: "user", content: typeof m.content === "string" ? m.content : partsOf(m.content, i) };
      case "assistant": {
        const content = m.content == null ? null : textOf(m.content);
        const thinking = m.reasoning_content ?? m.reasoning ?? null;
        const toolCalls = Array.isArray(m.tool_calls)
          ? m.tool_calls.map((c: any, j: number) => ({
              id: String(c?.id ?? `call_${j}`),
              name: String(c?.function?.name ?? ""),
              arguments: typeof c?.function?.arguments === "string" ? c.function.arguments : JSON.stringify(c?.function?.arguments ?? {}),
            }))
          : undefined;
        return { role: "assistant", content, thinking: typeof thinking === "string" ? thinking : null, ...(toolCalls ? { toolCalls } : {}) };
      }
      case "tool":
        if (typeof m.tool_call_id !== "string") throw new VeilError("VALIDATION_ERROR", `messages[${i}]: a tool message needs tool_call_id`);
        return { role: "tool", toolCallId: m.tool_call_id, content: typeof m.content === "string" ? m.content : partsOf(m.content, i) };
      default:
        throw new VeilError("VALIDATION_ERROR", `messages[${i}]: unknown role ${JSON.stringify(m.role)}`);
    }
  });
}

/** OpenAI `tools` (`{type:"function", function:{…}}`, or bare `{name, …}`) → LlmToolSpec. */
export function fromWireTools(tools: unknown): LlmToolSpec[] | undefined {
  if (tools == null) return undefined;
  if (!Array.isArray(tools)) throw new VeilError("VALIDATION_ERROR", "tools must be an array");
  return tools.map((t: any, i) => {
    const fn = t?.function ?? t;
    if (typeof fn?.name !== "string") throw new VeilError("VALIDATION_ERROR", `tools[${i}] needs a function name`);
    return { name: fn.name, description: String(fn.description ?? ""), parameters: fn.parameters ?? { type: "object", properties: {} } };
  });
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p: any) => (typeof p?.text === "string" ? p.text : "")).join("");
  return content == null ? "" : String(content);
}

function partsOf(content: unknown, i: number): ContentPart[] {
  if (content == null) return [];
  if (!Array.isArray(content)) throw new VeilError("VALIDATION_ERROR", `messages[${i}].content must be a string or an array of parts`);
  return content.map((p: any): ContentPart => {
    if (p?.type === "text") return { type: "text", text: String(p.text ?? "") };
    if (p?.type === "image_url") {
      const url = String(typeof p.image_url === "string" ? p.image_url : (p.image_url?.url ?? ""));
      const data = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(url);
      return data ? { type: "image", mediaType: data[1]!, data: data[2]! } : { type: "image", mediaType: "image/*", url };
    }
    if (p?.type === "input_audio") {
      const format = String(p.input_audio?.format ?? "wav");
      return { type: "audio", mediaType: `audio/${format === "mp3" ? "mpeg" : format}`, data: String(p.input_audio?.data ?? "") };
    }
    throw new VeilError("VALIDATION_ERROR", `messages[${i}]: unsupported content part type ${JSON.stringify(p?.type)}`);
  });
}
