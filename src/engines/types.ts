import type { Clock } from "../base/clock.js";
import type { Logger } from "../base/log.js";
import type { TokenUsage } from "../base/usage.js";
import type { Budget, ReasoningConfig } from "../config/types.js";
import type { AssistantMessage, LlmMessage, ToolCallRequest } from "../llm/types.js";
import type { SessionToolset } from "../tools/registry.js";
import type { Attachment } from "../tools/types.js";

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

/** How a run ended, as the session manager and callers see it (built by the recorder from the events). */
export interface RunResult {
  content: string | null;
  finishReason: string;
  stopReason: StopReason;
  messageId: string | null;
  usage: TokenUsage;
  iterations: number;
  /** Spend of this run in USD (0 when the model has no price). */
  costUsd?: number;
  error?: { code: string; message: string };
}

/** One tool call's outcome after the state machine (or the engine) answered it. */
export interface ToolCallResult {
  call: ToolCallRequest;
  output: string;
  attachments?: Attachment[];
  details?: unknown;
  success: boolean;
  state: "done" | "error" | "cancelled";
  durationMs: number;
}

/**
 * What an engine reports while it runs. The recorder turns each into rows, the event log
 * and observer calls, so every engine gets the same storage, wire events and multi-agent
 * behaviour without touching any of them.
 */
export type RunEvent =
  | { type: "text_delta"; delta: string }
  | { type: "thinking_delta"; delta: string }
  /** The model committed to a tool name; arguments may still be streaming (→ inference.tool). */
  | { type: "tool_call_started"; id: string; name: string }
  /** After each model call: adds to the session's usage and sets its context size. */
  | { type: "model_usage"; usage: TokenUsage }
  /** An assistant message is complete; `final` when the run ends with it. */
  | { type: "assistant_message"; message: AssistantMessage; finishReason: string; usage: TokenUsage; final: boolean }
  /** A call the engine answers itself (its own native tools, or a call it refuses to run). */
  | { type: "tool_started"; call: ToolCallRequest; input: unknown }
  | { type: "tool_progress"; callId: string; name: string; elapsedMs: number }
  | { type: "tool_finished"; result: ToolCallResult; input: unknown }
  | { type: "run_ended"; stopReason: StopReason; error?: { code: string; message: string } };

export interface RunRequest {
  sessionId: string;
  modelKey: string;
  reasoning: ReasoningConfig | null;
  systemPrompt: string;
  /** History up to and including the message(s) that started the run. */
  history: LlmMessage[];
  toolset: SessionToolset;
  /** Read before every model call, so budget changes apply at once. */
  budget(): Promise<Budget>;
  /** Session usage before the run (for the token budget). */
  usageBefore: TokenUsage;
  maxOutputTokens?: number;
  signal: AbortSignal;
  /** What the engine saved for this session last time (e.g. an SDK conversation id). */
  engineState: Record<string, unknown> | null;
}

/** What the runtime offers an engine while it runs. */
export interface RunIO {
  /** Runs one call through Veil's tool-call state machine; records its events and rows. Never throws. */
  executeTool(call: ToolCallRequest): Promise<ToolCallResult>;
  /** Messages that arrived since the last boundary (already stored), in order. */
  nextInputs(): Promise<LlmMessage[]>;
  /** True when messages wait (cheap; decides whether a text reply ends the run). */
  hasPendingInput(): boolean;
  /** A stop the runtime wants at the next boundary ("suspended"), if any. */
  stopRequested(): StopReason | null;
  saveEngineState(state: Record<string, unknown>): Promise<void>;
  clock: Clock;
  log: Logger;
}

/** An engine runs one turn of a session and reports it as events. */
export interface Engine {
  readonly name: string;
  handles(modelKey: string): boolean;
  run(request: RunRequest, io: RunIO): AsyncIterable<RunEvent>;
}
