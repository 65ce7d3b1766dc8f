import type { Clock } from "../../base/clock.js";
import type { ToolCallRequest } from "../../llm/types.js";
import type { RunEvent } from "../types.js";

/** tool.progress cadence for native tools (at least every 5 s). */
export const PROGRESS_INTERVAL_MS = 5000;

type ResultBlock = { type?: string; tool_use_id?: string; content?: unknown; is_error?: boolean };
type Running = { call: ToolCallRequest; input: unknown; startedAt: number; stopProgress: () => void };

/**
 * The native tools (Claude's own `Read`…) in flight: the SDK runs them itself, so their
 * tool events come from here — started when their assistant message is recorded,
 * finished by the tool_result the SDK echoes back, with progress while they run.
 */
export class NativeCalls {
  private readonly running = new Map<string, Running>();
  /** When each call's model message ended (the SDK may start the tool before Veil records it). */
  private readonly announced = new Map<string, number>();
  /** Results that came back before their call was recorded. */
  private readonly early = new Map<string, ResultBlock>();

  constructor(
    private readonly clock: Clock,
    private readonly emit: (event: RunEvent) => void,
  ) {}

  /** The model began this call (content_block_start); its events follow once its message is recorded. */
  announce(id: string): void {
    this.announced.set(id, this.clock.monotonic());
  }

  start(call: ToolCallRequest): void {
    let input: unknown = call.arguments;
    try {
      input = JSON.parse(call.arguments);
    } catch {
      // keep the raw text
    }
    const startedAt = this.announced.get(call.id) ?? this.clock.monotonic();
    this.announced.delete(call.id);
    let cancel = () => {};
    const tick = () => {
      this.emit({ type: "tool_progress", callId: call.id, name: call.name, elapsedMs: Math.round(this.clock.monotonic() - startedAt) });
      cancel = this.clock.setTimer(PROGRESS_INTERVAL_MS, tick);
    };
    cancel = this.clock.setTimer(PROGRESS_INTERVAL_MS, tick);
    this.running.set(call.id, { call, input, startedAt, stopProgress: () => cancel() });
    this.emit({ type: "tool_started", call, input });
    const early = this.early.get(call.id);
    if (early) {
      this.early.delete(call.id);
      this.complete(early);
    }
  }

  /** The content of an SDK `user` message: tool_result blocks of native calls finish them. */
  finish(content: unknown): void {
    if (!Array.isArray(content)) return;
    for (const block of content as ResultBlock[]) {
      if (block.type !== "tool_result" || !block.tool_use_id) continue;
      if (this.running.has(block.tool_use_id)) this.complete(block);
      else if (this.announced.has(block.tool_use_id)) this.early.set(block.tool_use_id, block);
    }
  }

  private complete(block: ResultBlock): void {
    const native = this.running.get(block.tool_use_id!);
    if (!native) return;
    this.running.delete(block.tool_use_id!);
    native.stopProgress();
    const success = block.is_error !== true;
    const durationMs = Math.round(this.clock.monotonic() - native.startedAt);
    this.emit({ type: "tool_finished", result: { call: native.call, output: resultText(block.content), success, state: success ? "done" : "error", durationMs }, input: native.input });
  }

  stopAll(): void {
    for (const native of this.running.values()) native.stopProgress();
    this.running.clear();
    this.announced.clear();
    this.early.clear();
  }
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: { type?: string; text?: string }) => (part.type === "text" ? (part.text ?? "") : `[${part.type ?? "content"}]`)).join("\n");
}
