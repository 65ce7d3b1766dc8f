import type { TokenUsage } from "../../base/usage.js";
import type { AssistantMessage, FinishReason, LlmError, LlmRequest, StreamEvent } from "../types.js";

/**
 * One model exchange as a recording keeps it (one JSON line each): what Veil asked (the
 * engine-neutral request, before any provider's wire format) and what came back, as the
 * finished answer rather than its deltas, so a recording can be read and edited by hand.
 */
export interface RecordedExchange {
  /** When the exchange ended (ISO-8601). */
  at: string;
  /** The workspace of the run that recorded it: a replay elsewhere reads it as its own workspace. */
  workspace: string;
  request: RecordedRequest;
  response: RecordedResponse;
}

/**
 * One HTTP exchange of the claude-cli engine, as the Anthropic Messages wire carried it: the
 * Agent SDK builds its requests itself, so they are kept as it sent them (no headers, so no
 * key; no `metadata`, which only names the machine and the SDK's session) and answered with
 * the response body as it came (a stream is its SSE text).
 */
export interface WireExchange {
  at: string;
  workspace: string;
  wire: "anthropic";
  request: { method: string; path: string; body: unknown };
  response: { status: number; contentType: string; body: string };
}

/** A line of a recording: an exchange of the native engine's client, or of the claude-cli engine's wire. */
export type RecordingLine = RecordedExchange | WireExchange;

export interface RecordedRequest extends Omit<LlmRequest, "model" | "signal"> {
  modelKey: string;
}

export type RecordedResponse =
  | { model: string; message: AssistantMessage; finishReason: FinishReason; usage: TokenUsage }
  | { model: string; error: LlmError; partial: AssistantMessage; usage: TokenUsage };

/** The request as recorded: what goes to the model, not how the call is cancelled. */
export function recordedRequest(request: Omit<LlmRequest, "model"> & { modelKey: string }): RecordedRequest {
  const { signal: _signal, ...rest } = request;
  // Through JSON, as a recording holds it: an undefined field is no field.
  return JSON.parse(JSON.stringify(rest)) as RecordedRequest;
}

/** A stream's last event as the response a recording keeps. */
export function recordedResponse(last: Extract<StreamEvent, { type: "done" | "error" }>): RecordedResponse {
  if (last.type === "done") return { model: last.model, message: last.message, finishReason: last.finishReason, usage: last.usage };
  return { model: last.model, error: last.error, partial: last.partial, usage: last.usage };
}

/** A recorded response streamed again: its text, thinking and tool calls as deltas, then its end. */
export function* replayedEvents(response: RecordedResponse): Generator<StreamEvent> {
  yield { type: "start", model: response.model };
  const message = "error" in response ? response.partial : response.message;
  if (message.thinking) yield { type: "thinking", delta: message.thinking };
  if (message.content) yield { type: "text", delta: message.content };
  // A failed answer keeps its text; its unfinished tool calls were never run.
  if ("error" in response) {
    yield { type: "error", error: response.error, partial: response.partial, usage: response.usage, model: response.model };
    return;
  }
  for (const [index, call] of message.toolCalls.entries()) {
    yield { type: "tool_call_start", index, id: call.id, name: call.name };
    yield { type: "tool_call_delta", index, argumentsDelta: call.arguments };
  }
  yield { type: "done", message: response.message, finishReason: response.finishReason, usage: response.usage, model: response.model };
}
