import type { Clock } from "../base/clock.js";
import type { Logger } from "../base/log.js";
import { ZERO_USAGE } from "../base/usage.js";
import type { ToolCallResult } from "../engines/types.js";
import type { SessionToolset } from "../tools/registry.js";
import type { ToolContext } from "../tools/types.js";
import type { HookRunner } from "./hooks.js";
import { RunRecorder } from "./recorder.js";
import type { SessionWriter } from "./session-writer.js";
import { toolCallEvents } from "./tool-calls.js";

export interface ExternalCallsDeps {
  writer: SessionWriter;
  toolset: SessionToolset;
  makeContext(call: { id: string; name: string }, signal: AbortSignal): ToolContext;
  clock: Clock;
  log: Logger;
  hooks?: HookRunner;
  newCallId(): string;
}

/**
 * Tool calls that come from outside any model run (`veil mcp`, whose client is another
 * agent). Each is stored as an assistant step of the session holding that one call, then
 * runs through the same tool-call path as a run's: PreToolUse/PostToolUse hooks, stored
 * states, tool.start / tool.progress / tool.end events, the tool's timeout and the abort
 * grace; one recorder writes all of it, as it does for a run.
 */
export class ExternalToolCalls {
  private readonly recorder: RunRecorder;

  constructor(private readonly deps: ExternalCallsDeps) {
    this.recorder = new RunRecorder({ writer: deps.writer, observers: () => [] });
  }

  /** Runs one call; `signal` is the client's cancel. Never throws. */
  async call(name: string, input: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult> {
    const call = { id: this.deps.newCallId(), name, arguments: JSON.stringify(input) };
    await this.recorder.apply({ type: "assistant_message", message: { content: null, thinking: null, toolCalls: [call] }, finishReason: "tool_calls", usage: { ...ZERO_USAGE }, final: false });
    const { toolset, makeContext, clock, log, hooks } = this.deps;
    let result: ToolCallResult | undefined;
    for await (const event of toolCallEvents(call, { toolset, makeContext, clock, log, hooks, signal, sessionId: this.deps.writer.sessionId })) {
      await this.recorder.apply(event);
      if (event.type === "tool_finished") result = event.result;
    }
    return result!;
  }
}
