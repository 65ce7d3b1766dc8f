import type { AssistantMessage, ToolCallRequest } from "../../llm/types.js";
import type { TokenUsage } from "../../base/usage.js";
import type { RunEvent } from "../types.js";
import { veilToolName } from "./tool-plan.js";

/** Usage fields of Anthropic's message_start / message_delta. */
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/** The Messages stream events this engine reads (a subset of the SDK's `stream_event.event`). */
export interface StreamEvent {
  type: string;
  index?: number;
  message?: { usage?: AnthropicUsage };
  content_block?: { type: string; id?: string; name?: string; text?: string; thinking?: string };
  delta?: { type?: string; text?: string; thinking?: string; partial_json?: string; stop_reason?: string | null };
  usage?: AnthropicUsage;
}

type Block = { kind: "text"; text: string } | { kind: "thinking"; text: string } | { kind: "tool"; id: string; name: string; json: string } | { kind: "other" };

/** Claude's stop_reason in the openai engine's vocabulary, so both engines end turns with the same finish reasons. */
export function mapStopReason(stop: string | null | undefined): string {
  switch (stop) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
      return "length";
    case "refusal":
      return "content_filter";
    default:
      return stop ?? "stop";
  }
}

/** Anthropic splits the prompt into fresh, cache-read and cache-written tokens; Veil's prompt_tokens counts all three. */
export function toTokenUsage(usage: AnthropicUsage): TokenUsage {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const cacheWrite = usage.cache_creation_input_tokens ?? 0;
  const prompt = (usage.input_tokens ?? 0) + cacheRead + cacheWrite;
  const output = usage.output_tokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: output, total_tokens: prompt + output, cached_tokens: cacheRead, cache_creation_tokens: cacheWrite, reasoning_tokens: 0 };
}

/**
 * Builds one model call's assistant message from the raw stream events, and the deltas
 * the UI sees on the way. The SDK's own `assistant` messages come per block and before
 * the stop reason and output usage, so the stream is the one source.
 */
export class MessageAssembler {
  private blocks: Block[] = [];
  private usage: AnthropicUsage = {};
  private stopReason: string | null = null;
  private open = false;

  /** Feeds one stream event; returns the run events it gives rise to. */
  accept(event: StreamEvent): RunEvent[] {
    switch (event.type) {
      case "message_start":
        this.blocks = [];
        this.usage = { ...event.message?.usage };
        this.stopReason = null;
        this.open = true;
        return [];
      case "content_block_start":
        return this.startBlock(event.index ?? this.blocks.length, event.content_block);
      case "content_block_delta":
        return this.delta(event.index ?? this.blocks.length - 1, event.delta ?? {});
      case "message_delta":
        if (event.delta?.stop_reason !== undefined) this.stopReason = event.delta.stop_reason;
        // message_delta's usage is cumulative: its fields replace message_start's.
        for (const [key, value] of Object.entries(event.usage ?? {})) if (typeof value === "number") (this.usage as Record<string, number>)[key] = value;
        return [];
      default:
        return [];
    }
  }

  get inProgress(): boolean {
    return this.open;
  }

  /** The finished call (at message_stop). */
  finish(): { message: AssistantMessage; finishReason: string; usage: TokenUsage } {
    this.open = false;
    return { message: this.partial(), finishReason: mapStopReason(this.stopReason), usage: toTokenUsage(this.usage) };
  }

  /** What has streamed so far (for a cut or cancelled call). */
  partial(): AssistantMessage {
    const text = this.blocks.filter((b) => b.kind === "text").map((b) => (b as { text: string }).text).join("");
    const thinking = this.blocks.filter((b) => b.kind === "thinking").map((b) => (b as { text: string }).text).join("");
    const toolCalls: ToolCallRequest[] = [];
    for (const block of this.blocks) {
      if (block.kind === "tool") toolCalls.push({ id: block.id, name: veilToolName(block.name), arguments: block.json.trim() === "" ? "{}" : block.json });
    }
    return { content: text.length > 0 ? text : null, thinking: thinking.length > 0 ? thinking : null, toolCalls };
  }

  usageSoFar(): TokenUsage {
    return toTokenUsage(this.usage);
  }

  private startBlock(index: number, block: StreamEvent["content_block"]): RunEvent[] {
    if (block?.type === "tool_use" && block.id && block.name) {
      this.blocks[index] = { kind: "tool", id: block.id, name: block.name, json: "" };
      return [{ type: "tool_call_started", id: block.id, name: veilToolName(block.name) }];
    }
    if (block?.type === "text") {
      this.blocks[index] = { kind: "text", text: block.text ?? "" };
      return block.text ? [{ type: "text_delta", delta: block.text }] : [];
    }
    if (block?.type === "thinking") {
      this.blocks[index] = { kind: "thinking", text: block.thinking ?? "" };
      return block.thinking ? [{ type: "thinking_delta", delta: block.thinking }] : [];
    }
    this.blocks[index] = { kind: "other" };
    return [];
  }

  private delta(index: number, delta: NonNullable<StreamEvent["delta"]>): RunEvent[] {
    const block = this.blocks[index];
    if (!block) return [];
    if (delta.type === "text_delta" && block.kind === "text" && delta.text) {
      block.text += delta.text;
      return [{ type: "text_delta", delta: delta.text }];
    }
    if (delta.type === "thinking_delta" && block.kind === "thinking" && delta.thinking) {
      block.text += delta.thinking;
      return [{ type: "thinking_delta", delta: delta.thinking }];
    }
    // Tool arguments are not streamed to the UI: between inference.tool and tool.start the UI sees nothing (a known silent window).
    if (delta.type === "input_json_delta" && block.kind === "tool") block.json += delta.partial_json ?? "";
    return [];
  }
}
