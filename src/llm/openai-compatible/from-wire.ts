import type { TokenUsage } from "../../store/store.js";
import type { AssistantMessage, FinishReason, StreamEvent, ToolCallRequest } from "../types.js";

type Json = Record<string, any>;

export function zeroUsage(): TokenUsage {
  return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cached_tokens: 0, cache_creation_tokens: 0, reasoning_tokens: 0 };
}

/**
 * Wire usage → TokenUsage. Handles OpenAI (`prompt_tokens_details.cached_tokens`),
 * OpenRouter (`cache_write_tokens`), Anthropic-style passthroughs
 * (`cache_read_input_tokens`, `cache_creation_input_tokens`) and DeepSeek
 * (`prompt_cache_hit_tokens`).
 */
export function mapUsage(wire: unknown): TokenUsage {
  const usage = zeroUsage();
  if (!wire || typeof wire !== "object") return usage;
  const u = wire as Json;
  const promptDetails = (u.prompt_tokens_details ?? {}) as Json;
  const completionDetails = (u.completion_tokens_details ?? {}) as Json;
  usage.prompt_tokens = num(u.prompt_tokens ?? u.input_tokens);
  usage.completion_tokens = num(u.completion_tokens ?? u.output_tokens);
  usage.total_tokens = num(u.total_tokens) || usage.prompt_tokens + usage.completion_tokens;
  usage.cached_tokens = num(promptDetails.cached_tokens ?? u.cache_read_input_tokens ?? u.prompt_cache_hit_tokens);
  usage.cache_creation_tokens = num(promptDetails.cache_write_tokens ?? u.cache_creation_input_tokens ?? promptDetails.cache_creation_tokens);
  usage.reasoning_tokens = num(completionDetails.reasoning_tokens);
  return usage;
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

/** Provider finish reasons → ours. Tool calls with a "stop" reason count as tool_calls. */
export function mapFinishReason(reason: unknown, hasToolCalls: boolean): FinishReason {
  switch (reason) {
    case "tool_calls":
    case "function_call":
    case "tool_use":
      return "tool_calls";
    case "length":
    case "max_tokens":
      return "length";
    case "content_filter":
      return "content_filter";
    case "stop":
    case "end_turn":
    case "stop_sequence":
    case null:
    case undefined:
    case "":
      return hasToolCalls ? "tool_calls" : "stop";
    default:
      return String(reason);
  }
}

interface ToolSlot {
  id: string;
  name: string;
  args: string;
  started: boolean;
  wireIndex: number | undefined;
}

/**
 * Folds `chat.completion.chunk`s into stream events and the final message. Tool calls are
 * keyed by the wire `index`; a chunk with a new id at an index already in use (some
 * servers send every call at index 0) opens a new call. Argument fragments that arrive
 * before the name are held back until the name arrives.
 */
export class ChunkAccumulator {
  private content = "";
  private hasContent = false;
  private thinking = "";
  private readonly tools: ToolSlot[] = [];
  private finish: unknown = undefined;
  private wireUsage: unknown = undefined;
  /** True once any text, thinking or tool event was produced. */
  produced = false;
  finishSeen = false;

  apply(chunk: Json): StreamEvent[] {
    const events: StreamEvent[] = [];
    if (chunk.usage) this.wireUsage = chunk.usage;
    const choices: Json[] = Array.isArray(chunk.choices) ? chunk.choices : [];
    for (const choice of choices) {
      if (typeof choice.index === "number" && choice.index !== 0) continue;
      const delta: Json = choice.delta ?? choice.message ?? {};
      const reasoning = firstString(delta.reasoning_content, delta.reasoning);
      if (reasoning) {
        this.thinking += reasoning;
        events.push({ type: "thinking", delta: reasoning });
      }
      if (typeof delta.content === "string" && delta.content.length > 0) {
        this.content += delta.content;
        this.hasContent = true;
        events.push({ type: "text", delta: delta.content });
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const call of delta.tool_calls as Json[]) this.applyToolCall(call, events);
      }
      if (choice.finish_reason != null) {
        this.finish = choice.finish_reason;
        this.finishSeen = true;
      }
    }
    if (events.length > 0) this.produced = true;
    return events;
  }

  private applyToolCall(call: Json, events: StreamEvent[]): void {
    const wireIndex = typeof call.index === "number" ? call.index : undefined;
    const id = typeof call.id === "string" && call.id.length > 0 ? call.id : undefined;
    const fn: Json = call.function ?? {};
    let slot = this.findSlot(wireIndex, id);
    if (!slot) {
      slot = { id: id ?? "", name: "", args: "", started: false, wireIndex };
      this.tools.push(slot);
    }
    const position = this.tools.indexOf(slot);
    if (id && !slot.id) slot.id = id;
    if (typeof fn.name === "string" && fn.name.length > 0 && !slot.started) {
      slot.name += fn.name;
    }
    const fragment = typeof fn.arguments === "string" ? fn.arguments : fn.arguments != null ? JSON.stringify(fn.arguments) : "";
    slot.args += fragment;
    if (!slot.started && slot.name) {
      slot.started = true;
      if (!slot.id) slot.id = `call_${position}`;
      events.push({ type: "tool_call_start", index: position, id: slot.id, name: slot.name });
      if (slot.args) events.push({ type: "tool_call_delta", index: position, argumentsDelta: slot.args });
    } else if (slot.started && fragment) {
      events.push({ type: "tool_call_delta", index: position, argumentsDelta: fragment });
    }
  }

  private findSlot(wireIndex: number | undefined, id: string | undefined): ToolSlot | undefined {
    if (id) {
      const byId = this.tools.find((t) => t.id === id);
      if (byId) return byId;
    }
    if (wireIndex !== undefined) {
      const byIndex = [...this.tools].reverse().find((t) => t.wireIndex === wireIndex);
      // Same index, different id: a new call reusing the index.
      if (byIndex && !(id && byIndex.id && byIndex.id !== id)) return byIndex;
      return undefined;
    }
    if (id) return undefined;
    return this.tools.at(-1);
  }

  message(): AssistantMessage {
    const toolCalls: ToolCallRequest[] = this.tools
      .filter((t) => t.name)
      .map((t, i) => ({ id: t.id || `call_${i}`, name: t.name, arguments: t.args.trim() === "" ? "{}" : t.args }));
    return { content: this.hasContent ? this.content : null, thinking: this.thinking || null, toolCalls };
  }

  finishReason(): FinishReason {
    return mapFinishReason(this.finish, this.tools.some((t) => t.name));
  }

  usage(): TokenUsage {
    return mapUsage(this.wireUsage);
  }
}

function firstString(...values: unknown[]): string | undefined {
  for (const v of values) if (typeof v === "string" && v.length > 0) return v;
  return undefined;
}
