import type { Logger } from "../base/log.js";
import { ZERO_USAGE, type TokenUsage } from "../base/usage.js";
import type { RunEvent, RunResult, StopReason, ToolCallResult } from "../engines/types.js";
import { addUsage, contextSize } from "../engines/stop-conditions.js";
import type { AssistantMessage } from "../llm/types.js";
import type { InboxItem, MessageRow, NewMessage, StepSpend } from "../store/store.js";
import type { Attachment, ToolWrites } from "../tools/types.js";
import type { ContextWriter } from "./compaction/session-context.js";
import { eventInput } from "./event-input.js";
import type { SessionWriter } from "./session-writer.js";
import type { TurnCheckpoints } from "./checkpoints/turn-checkpoints.js";

/** The meta `source` of the user rows that ask for a final answer matching the output schema. */
export const OUTPUT_REPAIR_SOURCE = "output_schema";

/** Engine events that write nothing of the session's rows: they need not wait for the state writes in flight. */
const QUIET_EVENTS: ReadonlySet<RunEvent["type"]> = new Set(["text_delta", "thinking_delta", "tool_call_started", "tool_started", "tool_progress", "model_call_started"]);

/** What the multi-agent layer (and later compaction) watches in a session's runs. */
export interface RunObserver {
  /** Messages drained from the inbox at a boundary (already stored). */
  onDrained?(rows: MessageRow[]): void;
  /** An assistant message was stored; `final` when the run ends with it. */
  onAssistant?(row: MessageRow, info: { final: boolean; hasText: boolean; writes: RunWrites }): void;
  onRunEnd?(result: RunResult, writes: RunWrites): void;
}

/** What an observer may write of the observed run's session: through the run's writer, so a node that lost the session writes none of it. */
export interface RunWrites {
  /** Replaces the meta of one of the session's messages. */
  setMessageMeta(id: string, meta: Record<string, unknown>): Promise<void>;
}

export interface RecorderDeps {
  /** The session's writer over the run's store (fenced on a cluster). */
  writer: SessionWriter;
  observers(): readonly RunObserver[];
  /** USD for one call's usage at the price of the model that answered; null when it has none. */
  costOf?(usage: TokenUsage, model?: string): number | null;
  /** Where the session's model context is kept (compaction): told of every stored row and every call's usage. */
  context?: { addRow(row: MessageRow, attachments?: readonly Attachment[]): void; noteUsage(usage: TokenUsage): void };
  /** What each turn of the run changed in the workspace becomes its checkpoint. */
  checkpoints?: TurnCheckpoints;
}

/**
 * The one writer of a run. Every engine event, tool calls included, comes in through
 * apply() and becomes its rows (an assistant message with its tool calls in one
 * transaction, each tool result as soon as its call ends), its wire events (through the
 * event log) and observer calls; the run's other writes (its status, the inbox it drains,
 * its end with chat.done, the placeholders of a cut run, compaction rows, what tools write
 * of the session) go through the same writer and so the same store: the run's fenced store
 * on a cluster. It also keeps what the run's result needs, so engines never build one.
 */
export class RunRecorder {
  private usage: TokenUsage = { ...ZERO_USAGE };
  private cost = 0;
  private priced = false;
  private iterations = 0;
  private last: { content: string | null; finishReason: string; messageId: string | null } = { content: null, finishReason: "stop", messageId: null };
  private ended: { stopReason: StopReason; error?: { code: string; message: string } } | null = null;
  /** Under an output schema: the answer's JSON text, and its value once it matched. */
  private output: { content: string | null; value?: unknown } | null = null;
  /**
   * The last model call's usage, not yet stored: the assistant step that follows it stores it
   * in its own statement (one round trip less per step); any other write stores it first.
   */
  private unstoredSpend: StepSpend | null = null;
  /**
   * The calls' state writes ("validating", "executing") in flight, in the order sent: the
   * call starts while its state is on the wire (one round trip off every tool step), and
   * every later write of the run waits for them first, so the terminal state always lands
   * after them. A refusal still stops the run as it lands (the fenced store aborts it);
   * any failure is thrown by the next write.
   */
  private stateWrites: Promise<unknown> = Promise.resolve();
  private stateFailure: { error: unknown } | null = null;

  private readonly writer: SessionWriter;

  /** What observers write of the session, through the run's writer. */
  get writes(): RunWrites {
    return this.writer;
  }
  private readonly sessionId: string;

  constructor(private readonly deps: RecorderDeps) {
    this.writer = deps.writer;
    this.sessionId = deps.writer.sessionId;
  }

  async apply(event: RunEvent): Promise<void> {
    // Only observability follows a call's start: nothing is stored or sent for it.
    if (event.type === "model_call_started") return;
    const writer = this.writer;
    if (event.type !== "tool_state" && !QUIET_EVENTS.has(event.type)) await this.statesStored();
    if (this.unstoredSpend && event.type !== "assistant_message" && !event.type.endsWith("_delta") && event.type !== "tool_call_started") await this.storeSpend();
    switch (event.type) {
      case "text_delta":
        void writer.publish({ type: "chat.chunk", content: event.delta });
        return;
      case "thinking_delta":
        void writer.publish({ type: "thinking.chunk", content: event.delta });
        return;
      case "tool_call_started":
        void writer.publish({ type: "inference.tool", name: event.name, toolCallId: event.id });
        return;
      case "model_usage":
        return this.addUsage(event.usage, event.model);
      case "assistant_message":
        await this.assistant(event.message, event.finishReason, event.usage, event.final);
        return;
      case "tool_started":
        void writer.publish({ type: "tool.start", toolName: event.call.name, toolCallId: event.call.id, toolInput: eventInput(event.input) });
        return;
      case "tool_state":
        this.sendState(event.callId, event.state);
        return;
      case "tool_progress":
        await writer.publish({ type: "tool.progress", toolName: event.name, toolCallId: event.callId, toolUseId: event.callId, elapsed: Math.round(event.elapsedMs / 1000) });
        return;
      case "tool_finished":
        return this.toolFinished(event.result, event.input);
      case "context_compacted":
        await writer.publish({ type: "session.compacted", reason: event.reason, tokensBefore: event.tokensBefore, tokensAfter: event.tokensAfter, summaryMessageId: null });
        return;
      case "output_repair":
        return this.repairRequested(event.content);
      case "structured_output":
        this.output = { content: event.content, ...("value" in event ? { value: event.value } : {}) };
        return;
      case "run_ended":
        this.ended = { stopReason: event.stopReason, ...(event.error ? { error: event.error } : {}) };
        return;
    }
  }

  private sendState(callId: string, state: "validating" | "executing"): void {
    const write = this.stateWrites.then(() => (this.stateFailure ? undefined : this.writer.store.setToolCallState(callId, this.sessionId, state)));
    this.stateWrites = write.catch((error: unknown) => void (this.stateFailure ??= { error }));
  }

  /** Waits for the state writes in flight; throws the first one's failure (once). */
  private async statesStored(): Promise<void> {
    await this.stateWrites;
    const failure = this.stateFailure;
    if (!failure) return;
    this.stateFailure = null;
    throw failure.error;
  }

  /** The result row and the call's terminal state are written together, as soon as the call ends. */
  private async toolFinished(result: ToolCallResult, input: unknown): Promise<void> {
    const { call } = result;
    const sessionId = this.sessionId;
    const row = await this.writer.store.recordToolResult({
      sessionId,
      callId: call.id,
      state: result.state,
      message: { id: this.writer.deps.ids.next("msg"), session_id: sessionId, role: "tool", content: result.output, tool_call_id: call.id, meta: { toolName: call.name, success: result.success } },
    });
    this.deps.context?.addRow(row, result.attachments);
    this.writer.publishToolResult(row, { name: call.name, id: call.id, input, success: result.success, durationMs: result.durationMs, details: result.details });
  }

  /**
   * The run starts: the session is running. The checkpoint baseline (a scan and a copy of the
   * workspace) is taken meanwhile, while the first model call goes out and waits for its
   * answer; whatever may change a file waits for it (baselineHeld): a tool that is not
   * read-only before it runs, the Stop hook before its commands. A settle queues behind it.
   */
  async started(): Promise<void> {
    await this.writer.setStatus("running", "run started");
    // Forgotten once taken, so later calls have nothing to wait for.
    this.baseline = this.deps.checkpoints?.ready().then(() => void (this.baseline = undefined));
  }

  /** The checkpoint baseline while it is being taken. */
  private baseline: Promise<void> | undefined;

  /** Resolves once the checkpoint baseline holds the workspace; undefined when it does already (or the run keeps none). */
  baselineHeld(): Promise<void> | undefined {
    return this.baseline;
  }

  /**
   * Moves the session's inbox items into the history (in arrival order, in one transaction),
   * publishes them and tells the observers. Returns the stored rows.
   */
  async deliverInbox(items: readonly InboxItem[], message: (item: InboxItem) => NewMessage): Promise<MessageRow[]> {
    await this.statesStored();
    await this.storeSpend();
    if (items.length === 0) return [];
    const rows = await this.writer.store.deliverInbox(
      this.sessionId,
      items.map((item) => ({ inboxId: item.id, message: message(item) })),
    );
    for (const row of rows) {
      this.deps.context?.addRow(row);
      void this.writer.publish({ type: "chat.message", role: "user", id: row.id, session_id: this.sessionId, content: row.content, created_at: row.created_at });
    }
    if (rows.length > 0) {
      await this.deps.checkpoints?.turnStarted(rows[0]!.id);
      for (const o of this.deps.observers()) o.onDrained?.(rows);
    }
    return rows;
  }

  /**
   * The run ended: a cut run's open calls get their placeholders, the session goes back to
   * idle (unless something else changed its status meanwhile, e.g. a suspend) and chat.done
   * carries the result.
   */
  async finished(result: RunResult, options: { cut: boolean; log: Logger }): Promise<void> {
    const { writer } = this;
    await this.statesStored().catch((error: unknown) => options.log.warn("could not store a tool call's state", { sessionId: this.sessionId, error: String(error) }));
    try {
      const session = await writer.store.getSession(this.sessionId);
      if (session && session.status === "running") await writer.setStatus("idle", result.stopReason);
    } catch (error) {
      options.log.warn("could not set session idle", { sessionId: this.sessionId, error: String(error) });
    }
    if (options.cut) await writer.closeDanglingCalls().catch(() => 0);
    // Before chat.done: a client told the turn ended finds its checkpoint.
    await this.deps.checkpoints?.settle().catch((error: unknown) => options.log.warn("could not checkpoint the turn", { sessionId: this.sessionId, error: String(error) }));
    await writer.publish({
      type: "chat.done",
      content: result.content,
      finishReason: result.finishReason,
      stopReason: result.stopReason,
      tokenUsage: result.usage,
      messageId: result.messageId,
      ...(result.costUsd !== undefined ? { cost_usd: result.costUsd } : {}),
      ...(result.error ? { error: result.error } : {}),
      ...("structured" in result ? { structured: result.structured } : {}),
    });
  }

  /** What one tool call of this run may write of the session (through the run's store). */
  toolWrites(call: { id: string; name: string }): ToolWrites {
    return this.writer.toolWrites(call);
  }

  /** Where this run's compactions store their rows and events, and count the summarizer's spend (this turn's cost too). */
  contextWriter(): ContextWriter {
    return { store: this.writer.store, publish: (body) => this.writer.publish(body), spend: (usage, model, size) => this.addSpend(usage, model, size), compacted: () => this.writer.saveEngineState(null) };
  }

  /** A Stop hook's continuation, for the run's next boundary. */
  queueInput(content: string, meta: Record<string, unknown>): Promise<void> {
    return this.writer.queueInput(content, meta);
  }

  saveEngineState(state: Record<string, unknown>): Promise<void> {
    return this.writer.saveEngineState(state);
  }

  /** The run's result, from what the engine reported (an engine that stopped without saying why ended in error). */
  result(): RunResult {
    const stop = this.ended ?? { stopReason: "error" as const, error: { code: "INTERNAL_ERROR", message: "the engine ended without a result" } };
    const natural = stop.stopReason === "stop" || stop.stopReason === "length" || stop.stopReason === "content_filter";
    const structured = this.output && "value" in this.output && !stop.error ? { structured: this.output.value } : {};
    return {
      content: this.output ? this.output.content : this.last.content,
      finishReason: natural ? this.last.finishReason : stop.stopReason,
      stopReason: stop.stopReason,
      messageId: this.last.messageId,
      usage: this.usage,
      iterations: this.iterations,
      ...(this.priced ? { costUsd: this.cost } : {}),
      ...(stop.error ? { error: stop.error } : {}),
      ...structured,
    };
  }

  /** A request for a final answer that matches the output schema: a user row the next model call sees. */
  private async repairRequested(content: string): Promise<void> {
    const row = await this.writer.appendUserRow(content, { source: OUTPUT_REPAIR_SOURCE });
    this.deps.context?.addRow(row);
  }

  /**
   * Spend outside the run's own model calls (the summarizer of a compaction): added to the
   * session's totals and this turn's cost, not to the run's usage or iterations.
   */
  async addSpend(usage: TokenUsage, model: string, contextSize: number): Promise<void> {
    const cost = this.price(usage, model);
    await this.storeSpend();
    await this.writer.store.addTokenUsage(this.sessionId, usage, contextSize, cost);
  }

  /** Stores a model call's usage that no assistant step took (the run ended without one). */
  async storeSpend(): Promise<void> {
    await this.statesStored();
    const spend = this.unstoredSpend;
    if (!spend) return;
    this.unstoredSpend = null;
    await this.writer.store.addTokenUsage(this.sessionId, spend.usage, spend.contextSize, spend.costUsd);
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
    const { sessionId, writer } = this;
    const calls = message.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
    const spend = this.unstoredSpend ?? undefined;
    this.unstoredSpend = null;
    const row = await writer.store.appendAssistantStep(
      { id: writer.deps.ids.next("msg"), session_id: sessionId, role: "assistant", content: message.content, thinking: message.thinking, tool_calls: calls.length ? calls : null, finish_reason: finishReason, token_usage: usage },
      calls,
      spend,
    );
    this.last = { content: message.content, finishReason, messageId: row.id };
    this.deps.context?.addRow(row);
    void writer.publish({
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
    for (const o of this.deps.observers()) o.onAssistant?.(row, { final, hasText, writes: this.writer });
  }
}
