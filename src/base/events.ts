import type { SessionStatus, TokenUsage } from "./usage.js";

/**
 * The one event union: emitted by the loop and tools, streamed as SSE (flat JSON,
 * CONTRACT §6), and later rendered by the dashboard. Add new kinds here only.
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
  /** Streamed assistant text (Veil addition; the manual bundles text into chat.message). */
  | { type: "chat.chunk"; content: string }
  | { type: "thinking.chunk"; content: string }
  | { type: "inference.tool"; name: string; toolCallId: string }
  | { type: "tool.start"; toolName: string; toolCallId: string; toolInput: unknown }
  | { type: "tool.chunk"; toolName: string; toolCallId: string; chunk: string }
  | { type: "tool.progress"; toolName: string; toolUseId: string; elapsed: number }
  | {
      type: "tool.end";
      toolName: string;
      toolCallId: string;
      toolInput: unknown;
      output: string;
      outputPreview: string;
      success: boolean;
      durationMs: number;
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
      error?: { code: string; message: string };
    }
  | { type: "todo.updated"; todos: unknown[] }
  /** One hook command ran (CONTRACT §15). exitCode is null when it was killed at its timeout or could not start. */
  | { type: "hook.run"; event: string; command: string; exitCode: number | null; durationMs: number; blocked: boolean; timedOut?: boolean }
  | { type: "method.pending"; id: string; method: string; data: unknown; createdAt: string }
  | { type: "method.done"; id: string; timedOut: boolean };

export type VeilEventType = VeilEventBody["type"];

/** An event as published: body plus routing and ordering fields. */
export type VeilEvent = VeilEventBody & {
  /** Session the event belongs to; "" for server-wide events. */
  sessionId: string;
  /** Per-session sequence number (SSE id on /sessions/:id/events). */
  seq: number;
  /** Server-wide sequence number (SSE id on /events). */
  gseq: number;
  ts: number;
};

export type EventOf<T extends VeilEventType> = Extract<VeilEvent, { type: T }>;

export interface EventFilter {
  sessionId?: string;
  types?: readonly VeilEventType[];
}

/**
 * Publish/subscribe with bounded replay. In-process now; a cross-node bus
 * implements the same interface (test/conformance/event-bus.ts).
 */
export interface EventBus {
  publish(sessionId: string, body: VeilEventBody): VeilEvent;
  /** Handlers run synchronously in publish order; a throwing handler is isolated. */
  subscribe(filter: EventFilter, handler: (event: VeilEvent) => void): () => void;
  /**
   * Events after a sequence number, from the replay buffer. With a sessionId,
   * `after` is a per-session seq; without, a global gseq. Returns null when the
   * buffer no longer reaches back that far.
   */
  replay(filter: EventFilter, after: number): VeilEvent[] | null;
}
