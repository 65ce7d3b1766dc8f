import type { Clock } from "../base/clock.js";
import type { Logger } from "../base/log.js";
import type { TokenUsage } from "../base/usage.js";
import type { Budget, ReasoningConfig } from "../config/types.js";
import type { AssistantMessage, LlmError, LlmMessage, ToolCallRequest } from "../llm/types.js";
import type { SessionToolset } from "../tools/registry.js";
import type { Attachment } from "../tools/types.js";
import type { OutputSchema } from "./output-schema.js";

export type StopReason =
  | "stop"
  | "length"
  | "content_filter"
  | "max_iterations"
  | "max_wall_seconds"
  | "max_tokens"
  | "cancelled"
  | "suspended"
  /** The API key that owns the session has spent its budget. */
  | "budget"
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
  /** Under an output schema: the final answer's parsed value, once it matched. */
  structured?: unknown;
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
  /** A model call is sent (openai engine), or its answer begins (claude-cli: the SDK sends it). */
  | { type: "model_call_started"; model: string }
  /** After each model call: adds to the session's usage and sets its context size. */
  | { type: "model_usage"; usage: TokenUsage; /** The model that answered (a fallback may differ from the run's key); prices the call. */ model?: string }
  /** An assistant message is complete; `final` when the run ends with it. */
  | { type: "assistant_message"; message: AssistantMessage; finishReason: string; usage: TokenUsage; final: boolean }
  /**
   * A tool call's life: started, its stored states, progress while it runs, finished. Veil's
   * tool-call path (RunIO.executeTool) reports these; an engine also reports them for the
   * calls it answers itself (its own native tools, or a call it refuses to run).
   */
  | { type: "tool_started"; call: ToolCallRequest; input: unknown }
  /** The call passed its checks and waits for a PreToolUse hook ("validating"), or is about to run ("executing"). */
  | { type: "tool_state"; callId: string; state: "validating" | "executing" }
  | { type: "tool_progress"; callId: string; name: string; elapsedMs: number }
  | { type: "tool_finished"; result: ToolCallResult; input: unknown }
  /** The engine compacted its own conversation (claude-cli: the SDK's /compact) → session.compacted. */
  | { type: "context_compacted"; reason: "auto" | "manual"; tokensBefore: number; tokensAfter: number }
  /** Under an output schema: the final answer did not match, and this request for another goes into the history as a user message. */
  | { type: "output_repair"; content: string }
  /**
   * Under an output schema: the run's answer (its JSON text) and, when it matched, its parsed
   * value. The text stands for the last assistant message's when an engine's answer is not
   * one (claude-cli's StructuredOutput tool call).
   */
  | { type: "structured_output"; content: string | null; value?: unknown }
  | { type: "run_ended"; stopReason: StopReason; error?: { code: string; message: string } };

export interface RunRequest {
  sessionId: string;
  modelKey: string;
  reasoning: ReasoningConfig | null;
  systemPrompt: string;
  /** Sent after the system prompt (and the tools): what differs between sessions of one agent. */
  sessionBrief?: string;
  /** History up to and including the message(s) that started the run. */
  history: LlmMessage[];
  toolset: SessionToolset;
  /** Read before every model call, so budget changes apply at once. */
  budget(): Promise<Budget>;
  /** Session usage before the run (for the token budget). */
  usageBefore: TokenUsage;
  maxOutputTokens?: number;
  /** The session's compaction threshold (agent over settings), for engines that compact on their own. */
  compactThreshold?: number;
  signal: AbortSignal;
  /** What the engine saved for this session last time (e.g. an SDK conversation id). */
  engineState: Record<string, unknown> | null;
  /** The final answer must be JSON valid against this schema (tools work as usual until then). */
  outputSchema?: OutputSchema;
}

/** What the runtime offers an engine while it runs. */
export interface RunIO {
  /**
   * Runs one call through Veil's tool-call state machine, as the call's events (tool_started,
   * tool_state, tool_progress, and always last tool_finished with the result). The engine
   * yields each to its consumer as it comes: the call goes on only once its event was taken,
   * so a state is stored before the step it announces. Never throws. See runToolCalls.
   */
  executeTool(call: ToolCallRequest): AsyncIterable<RunEvent>;
  /** Messages that arrived since the last boundary (already stored), in order. */
  nextInputs(): Promise<LlmMessage[]>;
  /** True when messages wait (cheap; decides whether a text reply ends the run). */
  hasPendingInput(): boolean;
  /** A stop the runtime wants at the next boundary ("suspended"), if any. */
  stopRequested(): StopReason | null;
  saveEngineState(state: Record<string, unknown>): Promise<void>;
  /**
   * Context compaction, owned by the runtime: the messages of the next model
   * call, system prompt first, rebuilt from the session's stored history (latest summary,
   * pruned tool outputs) after the messages nextInputs() delivered. It compacts first when
   * due: the last call's context at or over the threshold, or a manual request waiting for
   * this boundary. An engine that sends Veil's history to its model calls it before every
   * call and uses the answer instead of its own list. An engine whose provider keeps the
   * conversation itself (the claude-cli SDK resumes its own session) does not call it; for
   * such an engine a compaction of the rows takes effect by dropping the saved engine state:
   * after a compaction, the next run gets `engineState: null` and its `history` is the
   * compacted view, from which it must start afresh.
   */
  modelContext?(): Promise<LlmMessage[]>;
  /**
   * A model call failed before any output. A provider's "prompt too long" answer compacts
   * and answers `{ retry }` with the messages for one retry; the same answer to that retry
   * (`retried: true`) answers `{ fail }`, the turn's CONTEXT_OVERFLOW error. Any other
   * error: null (handle it as usual). Never a loop: the engine retries at most once per call.
   */
  modelCallFailed?(error: LlmError, retried: boolean): Promise<{ retry: LlmMessage[] } | { fail: { code: string; message: string } } | null>;
  /**
   * The run is about to end naturally (a final answer with finish reason "stop"; never on
   * cancel, error or a budget). True: the runtime queued a new user message (a Stop hook's
   * continuation): deliver it with nextInputs() and go on in the same run.
   * Absent when nothing listens.
   */
  runEnding?(): Promise<boolean>;
  clock: Clock;
  log: Logger;
}

/** An engine runs one turn of a session and reports it as events. */
export interface Engine {
  readonly name: string;
  handles(modelKey: string): boolean;
  /**
   * True for an engine that registers every custom tool at the start of a run (claude-cli):
   * the system prompt then carries no "not loaded" summary of tier-2 tools.
   */
  readonly toolsUpFront?: boolean;
  /**
   * Before a turn is asked for: throws CONFIG_ERROR naming what the key needs and is not
   * installed or configured (a provider's key, the Claude Agent SDK…), so a caller can
   * refuse the request instead of starting a turn that fails.
   */
  checkReady?(modelKey: string): Promise<void>;
  run(request: RunRequest, io: RunIO): AsyncIterable<RunEvent>;
}
