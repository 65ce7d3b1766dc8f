import type { EventSink } from "../base/events.js";
import type { IdGenerator } from "../base/ids.js";
import { ZERO_USAGE, type TokenUsage } from "../base/usage.js";
import type { RunEvent, RunResult, StopReason, ToolCallResult } from "../engines/types.js";
import { addUsage, contextSize } from "../engines/stop-conditions.js";
import type { AssistantMessage, ToolCallRequest } from "../llm/types.js";
import type { MessageRow, StepSpend, Store, ToolCallState } from "../store/store.js";
import { preview } from "../tools/format.js";
import type { Attachment } from "../tools/types.js";
import { eventInput } from "./event-input.js";

/** What the multi-agent layer (and later compaction) watches in a session's runs. */
export interface RunObserver {
  /** Messages drained from the inbox at a boundary (already stored). */
  onDrained?(rows: MessageRow[]): void;
  /** An assistant message was stored; `final` when the run ends with it. */
  onAssistant?(row: MessageRow, info: { final: boolean; hasText: boolean }): void;
  onRunEnd?(result: RunResult): void;
}

export interface RecorderDeps {
  sessionId: string;
  store: Store;
  events: EventSink;
  ids: IdGenerator;
  observers(): readonly RunObserver[];
  /** USD for one call's usage at the price of the model that answered; null when it has none. */
  costOf?(usage: TokenUsage, model?: string): number | null;
  /** Where the session's model context is kept (compaction): told of every stored row and every call's usage. */
  context?: { addRow(row: MessageRow, attachments?: readonly Attachment[]): void; noteUsage(usage: TokenUsage): void };
}

/**
 * The one place a run touches the outside world: every engine event becomes its rows (an
 * assistant message with its tool calls in one transaction, each tool result as soon as its
 * call ends), its wire events (CONTRACT §6, through the event log) and observer calls.
 * It also keeps what the run's result needs, so engines never build one.
 */
export class RunRecorder {
  private usage: TokenUsage = { ...ZERO_USAGE };
  private cost = 0;
  private priced = false;
  private iterations = 0;
  private last: { content: string | null; finishReason: string; messageId: string | null } = { content: null, finishReason: "stop", messageId: null };
  private ended: { stopReason: StopReason; error?: { code: string; message: string } } | null = null;
  /**
   * The last model call's usage, not yet stored: the assistant step that follows it stores it
   * in its own statement (one round trip less per step); any other write stores it first.
   */
  private unstoredSpend: StepSpend | null = null;

  constructor(private readonly deps: RecorderDeps) {}

  async apply(event: RunEvent): Promise<void> {
    const { sessionId, events } = this.deps;
    if (this.unstoredSpend && event.type !== "assistant_message" && !event.type.endsWith("_delta") && event.type !== "tool_call_started") await this.storeSpend();
    switch (event.type) {
      case "text_delta":
        void events.publish(sessionId, { type: "chat.chunk", content: event.delta });
        return;
      case "thinking_delta":
        void events.publish(sessionId, { type: "thinking.chunk", content: event.delta });
        return;
      case "tool_call_started":
        void events.publish(sessionId, { type: "inference.tool", name: event.name, toolCallId: event.id });
        return;
      case "model_usage":
        return this.addUsage(event.usage, event.model);
      case "assistant_message":
        await this.assistant(event.message, event.finishReason, event.usage, event.final);
        return;
      case "tool_started":
        return this.toolStarted(event.call, event.input);
      case "tool_progress":
        return this.toolProgress(event.callId, event.name, event.elapsedMs);
      case "tool_finished":
        return this.toolFinished(event.result, event.input);
      case "context_compacted":
        await events.publish(sessionId, { type: "session.compacted", reason: event.reason, tokensBefore: event.tokensBefore, tokensAfter: event.tokensAfter, summaryMessageId: null });
        return;
      case "run_ended":
        this.ended = { stopReason: event.stopReason, ...(event.error ? { error: event.error } : {}) };
        return;
    }
  }

  async toolState(callId: string, state: Extract<ToolCallState, "validating" | "executing">): Promise<void> {
    await this.storeSpend();
    await this.deps.store.setToolCallState(callId, this.deps.sessionId, state);
  }

  async toolStarted(call: ToolCallRequest, input: unknown): Promise<void> {
    void this.deps.events.publish(this.deps.sessionId, { type: "tool.start", toolName: call.name, toolCallId: call.id, toolInput: eventInput(input) });
  }

  async toolProgress(callId: string, name: string, elapsedMs: number): Promise<void> {
    await this.deps.events.publish(this.deps.sessionId, { type: "tool.progress", toolName: name, toolCallId: callId, toolUseId: callId, elapsed: Math.round(elapsedMs / 1000) });
  }

  /** The result row and the call's terminal state are written together, as soon as the call ends. */
  async toolFinished(result: ToolCallResult, input: unknown): Promise<void> {
    const { sessionId, store, events, ids } = this.deps;
    const { call } = result;
    await this.storeSpend();
    const row = await store.recordToolResult({
      sessionId,
      callId: call.id,
      state: result.state,
      message: { id: ids.next("msg"), session_id: sessionId, role: "tool", content: result.output, tool_call_id: call.id, meta: { toolName: call.name, success: result.success } },
    });
    this.deps.context?.addRow(row, result.attachments);
    void events.publish(sessionId, {
      type: "tool.end",
      toolName: call.name,
      toolCallId: call.id,
      toolInput: eventInput(input),
      output: result.output,
      outputPreview: preview(result.output),
      success: result.success,
      durationMs: result.durationMs,
      details: result.details ?? null,
    });
    void events.publish(sessionId, { type: "chat.message", role: "tool", id: row.id, session_id: sessionId, content: row.content, tool_call_id: call.id, created_at: row.created_at });
  }

  /** User rows a boundary moved from the inbox into the history. */
  async drained(rows: MessageRow[]): Promise<void> {
    const { sessionId, events } = this.deps;
    await this.storeSpend();
    for (const row of rows) {
      this.deps.context?.addRow(row);
      void events.publish(sessionId, { type: "chat.message", role: "user", id: row.id, session_id: sessionId, content: row.content, created_at: row.created_at });
    }
    if (rows.length > 0) for (const o of this.deps.observers()) o.onDrained?.(rows);
  }

  /** The run's result, from what the engine reported (an engine that stopped without saying why ended in error). */
  result(): RunResult {
    const stop = this.ended ?? { stopReason: "error" as const, error: { code: "INTERNAL_ERROR", message: "the engine ended without a result" } };
    const natural = stop.stopReason === "stop" || stop.stopReason === "length" || stop.stopReason === "content_filter";
    return {
      content: this.last.content,
      finishReason: natural ? this.last.finishReason : stop.stopReason,
      stopReason: stop.stopReason,
      messageId: this.last.messageId,
      usage: this.usage,
      iterations: this.iterations,
      ...(this.priced ? { costUsd: this.cost } : {}),
      ...(stop.error ? { error: stop.error } : {}),
    };
  }

  /**
   * Spend outside the run's own model calls (the summarizer of a compaction): added to the
   * session's totals and this turn's cost, not to the run's usage or iterations.
   */
  async addSpend(usage: TokenUsage, model: string, contextSize: number): Promise<void> {
    const cost = this.price(usage, model);
    await this.storeSpend();
    await this.deps.store.addTokenUsage(this.deps.sessionId, usage, contextSize, cost);
  }

  /** Stores a model call's usage that no assistant step took (the run ended without one). */
  async storeSpend(): Promise<void> {
    const spend = this.unstoredSpend;
    if (!spend) return;
    this.unstoredSpend = null;
    await this.deps.store.addTokenUsage(this.deps.sessionId, spend.usage, spend.contextSize, spend.costUsd);
  }

  private async addUsage(usage: TokenUsage, model?: string): Promise<void> {
    this.iterations++;
    this.usage = addUsage(this.usage, usage);
    const cost = this.price(usage, model);
    this.deps.context?.noteUsage(usage);
    await this.storeSpend();
    this.unstoredSpend = { usage, contextSize: contextSize(usage), costUsd: cost };
  }

  private price(usage: TokenUsage, model?: string): number {
    const cost = this.deps.costOf?.(usage, model) ?? null;
    if (cost === null) return 0;
    this.priced = true;
    this.cost += cost;
    return cost;
  }

  private async assistant(message: AssistantMessage, finishReason: string, usage: TokenUsage, final: boolean): Promise<void> {
    const { sessionId, store, events, ids } = this.deps;
    const calls = message.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
    const spend = this.unstoredSpend ?? undefined;
    this.unstoredSpend = null;
    const row = await store.appendAssistantStep(
      { id: ids.next("msg"), session_id: sessionId, role: "assistant", content: message.content, thinking: message.thinking, tool_calls: calls.length ? calls : null, finish_reason: finishReason, token_usage: usage },
      calls,
      spend,
    );
    this.last = { content: message.content, finishReason, messageId: row.id };
    this.deps.context?.addRow(row);
    void events.publish(sessionId, {
      type: "chat.message",
      role: "assistant",
      id: row.id,
      session_id: sessionId,
      content: row.content,
      created_at: row.created_at,
      finishReason,
      tokenUsage: usage,
      thinking_content: row.thinking,
      ...(row.tool_calls ? { tool_calls: row.tool_calls } : {}),
    });
    const hasText = Boolean(message.content && message.content.trim());
    for (const o of this.deps.observers()) o.onAssistant?.(row, { final, hasText });
  }
}
