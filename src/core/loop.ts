import type { Budget, ReasoningConfig } from "../config/types.js";
import type { AssistantMessage, LlmClient, LlmError, LlmMessage, StreamEvent, ToolCallRequest } from "../llm/types.js";
import type { MessageRow, Store, TokenUsage } from "../store/store.js";
import { ZERO_USAGE } from "../store/store.js";
import type { SessionToolset } from "../tools/registry.js";
import type { Logger } from "../tools/types.js";
import { toolResultContent } from "./context-builder.js";
import type { IdGenerator } from "../base/ids.js";
import { addUsage, budgetStop, contextSize } from "./stop-conditions.js";
import { cancelledText, runToolCall, type ToolCallResult, type ToolRunDeps } from "./tool-calls.js";

export type StopReason =
  | "stop"
  | "length"
  | "content_filter"
  | "max_iterations"
  | "max_wall_seconds"
  | "max_tokens"
  | "cancelled"
  | "suspended"
  | "error";

export interface RunResult {
  content: string | null;
  finishReason: string;
  stopReason: StopReason;
  messageId: string | null;
  usage: TokenUsage;
  iterations: number;
  error?: { code: string; message: string };
}

/** Hooks the runner and the multi-agent layer use to observe a run. */
export interface LoopHooks {
  /** Messages drained from the inbox at a boundary (already persisted). */
  onDrained?(rows: MessageRow[]): void;
  /** An assistant message was stored; `final` when the run ends with it. */
  onAssistant?(row: MessageRow, info: { final: boolean; hasText: boolean }): void;
}

export interface LoopInput {
  sessionId: string;
  modelKey: string;
  reasoning: ReasoningConfig | null;
  systemPrompt: string;
  /** History up to and including the message(s) that started the run. */
  history: LlmMessage[];
  toolset: SessionToolset;
  /** Read before every model call, so update-session budget changes apply at once. */
  budget(): Promise<Budget>;
  /** Session usage before the run (for the token budget). */
  usageBefore: TokenUsage;
  maxOutputTokens?: number;
}

export interface LoopDeps extends Omit<ToolRunDeps, "toolset" | "sessionId"> {
  llm: LlmClient;
  ids: IdGenerator;
  signal: AbortSignal;
  /** Persists pending inbox items as user messages; returns them in order. */
  drainInbox(): Promise<MessageRow[]>;
  /** True when the inbox has items (cheap; used to decide if a text reply ends the run). */
  hasInbox(): boolean;
  /** Reason the runner wants the run to stop at the next boundary ("suspended"), if any. */
  stopRequested(): StopReason | null;
  hooks?: LoopHooks;
  log: Logger;
}

/**
 * One run: model call → tool calls (in parallel) → results → repeat, until the
 * model stops or a limit stops it. Messages are persisted as they happen, so the
 * store is the source of truth if the process dies mid-run.
 */
export async function runLoop(input: LoopInput, deps: LoopDeps): Promise<RunResult> {
  const { store, bus, clock } = deps;
  const sessionId = input.sessionId;
  const messages: LlmMessage[] = [{ role: "system", content: input.systemPrompt }, ...input.history];
  const startedAt = clock.monotonic();
  let usage: TokenUsage = { ...ZERO_USAGE };
  let iterations = 0;
  let last: { content: string | null; finishReason: string; messageId: string | null } = { content: null, finishReason: "stop", messageId: null };
  const toolDeps: ToolRunDeps = { ...deps, toolset: input.toolset, sessionId };

  const end = (stopReason: StopReason, error?: LlmError | { code: string; message: string }): RunResult => ({
    content: last.content,
    finishReason: stopReason === "stop" || stopReason === "length" || stopReason === "content_filter" ? last.finishReason : stopReason,
    stopReason,
    messageId: last.messageId,
    usage,
    iterations,
    ...(error ? { error: { code: error.code, message: error.message } } : {}),
  });

  for (;;) {
    const drained = await deps.drainInbox();
    if (drained.length > 0) {
      for (const row of drained) messages.push({ role: "user", content: row.content ?? "" });
      deps.hooks?.onDrained?.(drained);
    }
    if (deps.signal.aborted) return end("cancelled");
    const requested = deps.stopRequested();
    if (requested) return end(requested);
    const limit = budgetStop(await input.budget(), {
      iterations,
      startedAt,
      now: clock.monotonic(),
      sessionUsage: addUsage(input.usageBefore, usage),
    });
    if (limit) return end(limit);

    iterations++;
    const response = await streamOnce(messages, input, deps);
    usage = addUsage(usage, response.usage);
    if (response.usage.total_tokens > 0 || response.usage.prompt_tokens > 0) {
      await store.addTokenUsage(sessionId, response.usage, contextSize(response.usage));
    }

    if (response.kind === "error" && response.error.code !== "CANCELLED") {
      const partial = response.message;
      if (partial.content) await persistAssistant({ ...partial, toolCalls: [] }, "error", response.usage, false);
      return end("error", response.error);
    }
    if (response.kind === "error") {
      // Cancelled mid-stream: keep the text the user already saw; drop unexecuted tool calls.
      if (response.message.content) await persistAssistant({ ...response.message, toolCalls: [] }, "cancelled", response.usage, false);
      return end("cancelled");
    }

    const { message, finishReason } = response;
    const calls = message.toolCalls;
    const final = calls.length === 0 && !deps.hasInbox();
    const row = await persistAssistant(message, finishReason, response.usage, final);
    messages.push({ role: "assistant", content: message.content, thinking: message.thinking, toolCalls: calls.length ? calls : undefined });

    if (calls.length === 0) {
      if (final) return end(finishReason === "length" ? "length" : finishReason === "content_filter" ? "content_filter" : "stop");
      continue;
    }

    const results = await runCalls(calls, row.id);
    for (const result of results) {
      messages.push({ role: "tool", toolCallId: result.call.id, content: toolResultContent(result.output, result.attachments) });
    }
    if (deps.signal.aborted) return end("cancelled");
  }

  async function persistAssistant(message: AssistantMessage, finishReason: string, callUsage: TokenUsage, final: boolean): Promise<MessageRow> {
    const row = await store.appendMessage({
      id: deps.ids.next("msg"),
      session_id: sessionId,
      role: "assistant",
      content: message.content,
      thinking: message.thinking,
      tool_calls: message.toolCalls.length ? message.toolCalls : null,
      finish_reason: finishReason,
      token_usage: callUsage,
    });
    for (const call of message.toolCalls) {
      await store.upsertToolCall({ id: call.id, session_id: sessionId, message_id: row.id, name: call.name, arguments: call.arguments, state: "pending" });
    }
    last = { content: message.content, finishReason, messageId: row.id };
    bus.publish(sessionId, {
      type: "chat.message",
      role: "assistant",
      id: row.id,
      session_id: sessionId,
      content: row.content,
      created_at: row.created_at,
      finishReason,
      tokenUsage: callUsage,
      thinking_content: row.thinking,
      ...(row.tool_calls ? { tool_calls: row.tool_calls } : {}),
    });
    deps.hooks?.onAssistant?.(row, { final, hasText: Boolean(message.content && message.content.trim()) });
    return row;
  }

  async function runCalls(calls: ToolCallRequest[], messageId: string): Promise<ToolCallResult[]> {
    void messageId;
    const settled = await Promise.all(calls.map((call) => runToolCall(call, deps.signal, toolDeps)));
    // Results are stored in the order the model asked for them, whatever order they finished in.
    for (const result of settled) {
      const row = await store.appendMessage({
        id: deps.ids.next("msg"),
        session_id: sessionId,
        role: "tool",
        content: result.output,
        tool_call_id: result.call.id,
        meta: { toolName: result.call.name, success: result.success },
      });
      bus.publish(sessionId, {
        type: "chat.message",
        role: "tool",
        id: row.id,
        session_id: sessionId,
        content: row.content,
        tool_call_id: result.call.id,
        created_at: row.created_at,
      });
    }
    return settled;
  }
}

type StreamOutcome =
  | { kind: "done"; message: AssistantMessage; finishReason: string; usage: TokenUsage }
  | { kind: "error"; error: LlmError; message: AssistantMessage; usage: TokenUsage };

async function streamOnce(messages: LlmMessage[], input: LoopInput, deps: LoopDeps): Promise<StreamOutcome> {
  const { bus } = deps;
  const sessionId = input.sessionId;
  let ended: Extract<StreamEvent, { type: "done" | "error" }> | undefined;
  const stream = deps.llm.stream({
    modelKey: input.modelKey,
    messages,
    tools: input.toolset.specs(),
    reasoning: input.reasoning,
    maxTokens: input.maxOutputTokens,
    signal: deps.signal,
  });
  for await (const event of stream) {
    switch (event.type) {
      case "text":
        bus.publish(sessionId, { type: "chat.chunk", content: event.delta });
        break;
      case "thinking":
        bus.publish(sessionId, { type: "thinking.chunk", content: event.delta });
        break;
      case "tool_call_start":
        bus.publish(sessionId, { type: "inference.tool", name: event.name, toolCallId: event.id });
        break;
      case "done":
      case "error":
        ended = event;
        break;
      default:
        break;
    }
  }
  const final = ended as Extract<StreamEvent, { type: "done" | "error" }> | undefined;
  if (!final) {
    return { kind: "error", error: { code: "LLM_ERROR", message: "the model stream ended without a result", retryable: false }, message: emptyMessage(), usage: { ...ZERO_USAGE } };
  }
  if (final.type === "error") return { kind: "error", error: final.error, message: final.partial, usage: final.usage };
  return { kind: "done", message: final.message, finishReason: final.finishReason, usage: final.usage };
}

function emptyMessage(): AssistantMessage {
  return { content: null, thinking: null, toolCalls: [] };
}

/** Placeholder results for tool calls a dead or cancelled run left without one, so history stays valid. */
export async function closeDanglingToolCalls(store: Store, sessionId: string, ids: IdGenerator): Promise<number> {
  const dangling = await store.listToolCalls(sessionId, { states: ["pending", "validating", "executing"] });
  if (dangling.length === 0) return 0;
  const answered = new Set(
    (await store.listMessages(sessionId)).filter((m) => m.role === "tool" && m.tool_call_id).map((m) => m.tool_call_id as string),
  );
  for (const call of dangling) {
    await store.setToolCallState(call.id, sessionId, "cancelled", cancelledText());
    if (!answered.has(call.id)) {
      await store.appendMessage({ id: ids.next("msg"), session_id: sessionId, role: "tool", content: cancelledText(), tool_call_id: call.id, meta: { toolName: call.name, placeholder: true } });
    }
  }
  return dangling.length;
}
