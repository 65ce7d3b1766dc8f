import type { SessionStatus, TokenUsage } from "./usage.js";

/**
 * The one event union: emitted by the loop and tools, streamed as SSE (flat JSON: `type`
 * and the routing fields beside the payload's own), and later rendered by the dashboard. Add new kinds here only.
 */
export type VeilEventBody =
  | {
      type: "chat.message";
      role: "user" | "assistant" | "tool";
      id: string;
      session_id: string;
      content: string | null;
      created_at: string;
      tool_call_id?: string;
      finishReason?: string | null;
      tokenUsage?: TokenUsage | null;
      thinking_content?: string | null;
      tool_calls?: { id: string; name: string; arguments: string }[];
    }
  /** Streamed assistant text (live only: the chat.message that follows carries the whole text). */
  | { type: "chat.chunk"; content: string }
  | { type: "thinking.chunk"; content: string }
  | { type: "inference.tool"; name: string; toolCallId: string }
  | { type: "tool.start"; toolName: string; toolCallId: string; toolInput: unknown }
  | { type: "tool.chunk"; toolName: string; toolCallId: string; chunk: string }
  /** At least every 5 s while a tool runs past 5 s; `toolUseId` equals `toolCallId` (the older name, kept for clients that read it). `elapsed` in seconds. */
  | { type: "tool.progress"; toolName: string; toolCallId: string; toolUseId: string; elapsed: number }
  | {
      type: "tool.end";
      toolName: string;
      toolCallId: string;
      toolInput: unknown;
      output: string;
      outputPreview: string;
      success: boolean;
      durationMs: number;
      /** The tool's structured result (for UIs), null when it has none. */
      details: unknown;
    }
  | { type: "session.state"; status: SessionStatus; reason?: string }
  | {
      type: "chat.done";
      content: string | null;
      finishReason: string;
      /** Why the run stopped: "stop", "max_iterations", "max_wall_seconds", "max_tokens", "cancelled", "error", "suspended"… */
      stopReason: string;
      tokenUsage: TokenUsage;
      messageId: string | null;
      /** The run's spend in USD at models.json prices. */
      cost_usd?: number;
      error?: { code: string; message: string };
      /** The final answer's parsed value, when the chat asked for an output schema and the answer matched it. */
      structured?: unknown;
    }
  /** The history was compacted; `summaryMessageId` is null when no summary was made. */
  | { type: "session.compacted"; reason: "auto" | "manual" | "overflow"; tokensBefore: number; tokensAfter: number; summaryMessageId: string | null }
  | { type: "todo.updated"; todos: unknown[] }
  /** The session's title was set: from its first message, or by PATCH /sessions/:id (null: cleared). */
  | { type: "session.titled"; title: string | null }
  /** One hook command ran. exitCode is null when it was killed at its timeout or could not start. */
  | { type: "hook.run"; event: string; command: string; exitCode: number | null; durationMs: number; blocked: boolean; timedOut?: boolean }
  | { type: "method.pending"; id: string; method: string; data: unknown; createdAt: string }
  | { type: "method.done"; id: string; timedOut: boolean }
  /** The sandbox's allowlist proxy refused a request (the call whose process asked, null when none is known). */
  | { type: "sandbox.blocked"; toolCallId: string | null; host: string; port: number };

export type VeilEventType = VeilEventBody["type"];

/** Streaming deltas: sent live, never stored; a replay has their text in the chat.message / tool.end that follows. */
export const LIVE_ONLY_EVENTS: ReadonlySet<VeilEventType> = new Set(["chat.chunk", "thinking.chunk", "tool.chunk"]);

/** An event as published: body plus routing and ordering fields. */
export type VeilEvent = VeilEventBody & {
  /** Session the event belongs to. */
  sessionId: string;
  /** Per-session sequence number (SSE id on /sessions/:id/events); absent on live-only deltas. */
  seq?: number;
  /** Store-wide sequence number (SSE id on /events); absent on live-only deltas. */
  gseq?: number;
  ts: number;
};

export type EventOf<T extends VeilEventType> = Extract<VeilEvent, { type: T }>;

export interface EventFilter {
  sessionId?: string;
  types?: readonly VeilEventType[];
}

/** Fan-out of events that are already numbered and stored. In-process now; a cross-node bus implements the same. */
export interface EventBus {
  /** Hands an event to every matching subscriber, synchronously, in call order; a throwing handler is isolated. */
  deliver(event: VeilEvent): void;
  subscribe(filter: EventFilter, handler: (event: VeilEvent) => void): () => void;
}

/** Where everything that happens to a session is announced: numbered, stored (deltas excepted), then delivered. */
export interface EventSink {
  /** Resolves once the event is stored and delivered. */
  publish(sessionId: string, body: VeilEventBody): Promise<VeilEvent>;
}

export function matchesFilter(filter: EventFilter, event: { sessionId: string; type: string }): boolean {
  if (filter.sessionId !== undefined && event.sessionId !== filter.sessionId) return false;
  if (filter.types && !filter.types.includes(event.type as VeilEventType)) return false;
  return true;
}
