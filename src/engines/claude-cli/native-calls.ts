import type { Clock } from "../../base/clock.js";
import type { ToolCallRequest } from "../../llm/types.js";
import type { RunEvent } from "./seam.js";

/** tool.progress cadence for native tools (CONTRACT §10: at least every 5 s). */
export const PROGRESS_INTERVAL_MS = 5000;

type Running = { call: ToolCallRequest; input: unknown; startedAt: number; stopProgress: () => void };

/**
 * The native tools (Claude's own `Read`…) in flight: the SDK runs them itself, so their
 * tool events come from here — started when their assistant message is recorded,
 * finished by the tool_result the SDK echoes back, with progress while they run.
 */
export class NativeCalls {
  private readonly running = new Map<string, Running>();

  constructor(
    private readonly clock: Clock,
    private readonly emit: (event: RunEvent) => void,
  ) {}

  start(call: ToolCallRequest): void {
    let input: unknown = call.arguments;
    try {
      input = JSON.parse(call.arguments);
    } catch {
      // keep the raw text
    }
    const startedAt = this.clock.monotonic();
    let cancel = () => {};
    const tick = () => {
      this.emit({ type: "tool_progress", callId: call.id, name: call.name, elapsedMs: Math.round(this.clock.monotonic() - startedAt) });
      cancel = this.clock.setTimer(PROGRESS_INTERVAL_MS, tick);
    };
    cancel = this.clock.setTimer(PROGRESS_INTERVAL_MS, tick);
    this.running.set(call.id, { call, input, startedAt, stopProgress: () => cancel() });
    this.emit({ type: "tool_started", call, input });
  }

  /** The content of an SDK `user` message: tool_result blocks of native calls finish them. */
  finish(content: unknown): void {
    if (!Array.isArray(content)) return;
    for (const block of content as { type?: string; tool_use_id?: string; content?: unknown; is_error?: boolean }[]) {
      if (block.type !== "tool_result" || !block.tool_use_id) continue;
      const native = this.running.get(block.tool_use_id);
      if (!native) continue;
      this.running.delete(block.tool_use_id);
      native.stopProgress();
      const success = block.is_error !== true;
      const durationMs = Math.round(this.clock.monotonic() - native.startedAt);
      this.emit({ type: "tool_finished", result: { call: native.call, output: resultText(block.content), success, state: success ? "done" : "error", durationMs }, input: native.input });
    }
  }

  stopAll(): void {
    for (const native of this.running.values()) native.stopProgress();
    this.running.clear();
  }
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: { type?: string; text?: string }) => (part.type === "text" ? (part.text ?? "") : `[${part.type ?? "content"}]`)).join("\n");
}
