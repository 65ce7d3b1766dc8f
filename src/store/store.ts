import type { Budget, ReasoningConfig } from "../config/types.js";
import type { CheckpointStore } from "./checkpoints.js";
export type * from "./checkpoints.js";

/**
 * The persistence seam. SQLite implements it now (store/sqlite); PostgreSQL later.
 * Every method is async so a networked store fits without changing callers.
 * Every implementation must pass test/conformance/store.ts.
 */

import type { SessionStatus, TokenUsage } from "../base/usage.js";
import type { AutomationStore } from "./automation.js";
export type * from "./automation.js";
export { ZERO_USAGE, type SessionStatus, type TokenUsage } from "../base/usage.js";

export interface SessionRow {
  id: string;
  agent: string;
  mode: string;
  status: SessionStatus;
  parent_session_id: string | null;
  spawn_depth: number;
  instance_name: string | null;
  /** Session-level model override (per-call > session > agent > settings). */
  model: string | null;
  reasoning: ReasoningConfig | null;
  budget_override: Budget | null;
  objective: string | null;
  success_criteria: string | null;
  token_usage: TokenUsage;
  /** The full prompt window of the last call: input + cache read + cache creation + output. */
  context_size: number;
  /** Total spend in USD at models.json prices (0 when the model has no `cost`). */
  cost_usd: number;
  /** One line: given on create or PATCH, else made from the first message; null until then. */
  title: string | null;
  /** Who started it: "api" (POST /sessions), "run" (veil run), "openai" (agent/<name> on the OpenAI wire), "agent" (a sub-agent), … */
  origin: string;
  /** Started by a one-shot caller and not continued since: closed once idle for limits.idleSessionTtl. */
  ephemeral: boolean;
  /** The session this one was forked from (POST /sessions/:id/fork). */
  forked_from: string | null;
  /** The API key that created the session (sub-agents inherit their parent's); null for the server secret. */
  owner_key: string | null;
  created_at: string;
  /** Last activity: a turn, a status change, usage. A title change does not count. */
  updated_at: string;
}

export type NewSession = Pick<SessionRow, "id" | "agent" | "mode"> &
  Partial<
    Pick<
      SessionRow,
      | "parent_session_id"
      | "spawn_depth"
      | "instance_name"
      | "model"
      | "reasoning"
      | "budget_override"
      | "objective"
      | "success_criteria"
      | "status"
      | "title"
      | "origin"
      | "ephemeral"
      | "forked_from"
      | "owner_key"
    >
  >;

export type SessionPatch = Partial<
  Pick<SessionRow, "status" | "model" | "reasoning" | "budget_override" | "token_usage" | "context_size" | "ephemeral">
>;

/** What listSessions selects and how it orders the rows. */
export interface SessionFilter {
  parentSessionId?: string;
  status?: SessionStatus;
  /** Only rows whose title, id, agent or instance name contains this text, ignoring case. */
  query?: string;
  /** "created" (default): oldest first; "activity": most recently active first (updated_at). */
  order?: "created" | "activity";
  limit?: number;
  /** Only the sessions this key owns. */
  ownerKey?: string;
}

/** One model call's usage, its prompt window and its price, as addTokenUsage takes them. */
export interface StepSpend {
  usage: TokenUsage;
  contextSize: number;
  costUsd?: number;
}

export type MessageRole = "system" | "user" | "assistant" | "tool";

export interface StoredToolCall {
  id: string;
  name: string;
  /** Raw JSON text of the arguments as the model sent them. */
  arguments: string;
}

export interface MessageRow {
  id: string;
  session_id: string;
  /** Order within the session, from 1. */
  seq: number;
  role: MessageRole;
  content: string | null;
  thinking: string | null;
  tool_calls: StoredToolCall[] | null;
  tool_call_id: string | null;
  finish_reason: string | null;
  token_usage: TokenUsage | null;
  /** Free-form: source ("user", "agent", "wakeup"), correlation ids, audit text. */
  meta: Record<string, unknown> | null;
  /** null for ordinary rows; "summary" for a compaction summary. */
  kind: string | null;
  /** Hidden from the model by a compaction; never deleted. */
  compacted: boolean;
  /** Left out of the model's history by a revert; never deleted. */
  reverted: boolean;
  created_at: string;
}

export type NewMessage = Pick<MessageRow, "id" | "session_id" | "role"> &
  Partial<Pick<MessageRow, "content" | "thinking" | "tool_calls" | "tool_call_id" | "finish_reason" | "token_usage" | "meta" | "kind">>;

/** One event of a session's durable log, stored as the JSON that is sent. */
export interface StoredEvent {
  /** Store-wide order (the SSE id on /events). */
  gseq: number;
  session_id: string;
  /** Per-session order (the SSE id on /sessions/:id/events); never repeats. */
  seq: number;
  type: string;
  ts: number;
  /** The event as sent on the wire, serialised once. */
  data: string;
}

export type NewStoredEvent = Omit<StoredEvent, "gseq">;

export type ToolCallState = "pending" | "validating" | "executing" | "done" | "error" | "cancelled";

export const TERMINAL_TOOL_STATES: readonly ToolCallState[] = ["done", "error", "cancelled"];

export interface ToolCallRow {
  id: string;
  session_id: string;
  /** The assistant message that asked for the call. */
  message_id: string;
  name: string;
  arguments: string;
  state: ToolCallState;
  output: string | null;
  started_at: string | null;
  ended_at: string | null;
}

export interface InboxItem {
  id: string;
  session_id: string;
  content: string;
  meta: Record<string, unknown> | null;
  created_at: string;
}

export interface TodoItem {
  id: string;
  content: string;
  status: "pending" | "in_progress" | "completed";
  priority: "high" | "medium" | "low";
}

export interface WakeupRow {
  session_id: string;
  /** As the caller gave it ("30m", "90s", "2h", "5"). */
  time: string;
  interval_ms: number;
  message: string;
  loop: boolean;
  /** Epoch ms of the next firing. */
  next_fire_at: number;
  created_at: string;
}

export interface AuditRow {
  id: number;
  session_id: string | null;
  kind: string;
  data: Record<string, unknown>;
  created_at: string;
}

export type KeyScope = "read" | "chat" | "admin";

/** An API key as stored: its value never, only its SHA-256 (`hash`) and the first characters (`prefix`). */
export interface ApiKeyRow {
  id: string;
  name: string;
  hash: string;
  prefix: string;
  scopes: KeyScope[];
  /** Agents it may start; null: any. */
  agents: string[] | null;
  requests_per_minute: number | null;
  budget_usd: number | null;
  expires_at: string | null;
  created_at: string;
  revoked_at: string | null;
}

export type NewApiKey = Omit<ApiKeyRow, "created_at" | "revoked_at">;

/** One request that changed something (or tried to): who, what, how it was answered. */
export interface RequestAuditRow {
  seq: number;
  at: string;
  /** The key id, or "admin" for the server secret. */
  key_id: string;
  method: string;
  path: string;
  status: number;
  session_id: string | null;
}

/** Keys, their request counters and the request audit trail (access.ts reads them). */
export interface AccessStore {
  createKey(key: NewApiKey): Promise<ApiKeyRow>;
  getKey(id: string): Promise<ApiKeyRow | undefined>;
  findKeyByHash(hash: string): Promise<ApiKeyRow | undefined>;
  /** Every key, revoked ones too, oldest first. */
  listKeys(): Promise<ApiKeyRow[]>;
  /** Marks the key revoked (once: a second call keeps the first time); undefined for an unknown id. */
  revokeKey(id: string): Promise<ApiKeyRow | undefined>;
  /** The total cost of the sessions each key owns, by key id (keys without sessions are absent). */
  spendByKey(keyId?: string): Promise<Record<string, number>>;
  /**
   * Counts one request of a key in the window starting at `windowStart` (epoch ms) and
   * returns the window's count so far, this one included; older windows are dropped.
   */
  countKeyRequest(keyId: string, windowStart: number): Promise<number>;
  addRequestAudit(row: Omit<RequestAuditRow, "seq">): Promise<RequestAuditRow>;
  /** Entries with seq > after, oldest first. */
  listRequestAudit(options?: { after?: number; limit?: number }): Promise<RequestAuditRow[]>;
}

export interface Store extends AutomationStore, CheckpointStore, AccessStore {
  createSession(session: NewSession): Promise<SessionRow>;
  getSession(id: string): Promise<SessionRow | undefined>;
  listSessions(filter?: SessionFilter): Promise<SessionRow[]>;
  updateSession(id: string, patch: SessionPatch): Promise<SessionRow>;
  /**
   * Sets the title without touching updated_at (naming is not activity). `ifUnset`: only when
   * the session has none yet (answers undefined when it had one); otherwise the title is the
   * caller's choice and the session stops being ephemeral. SESSION_NOT_FOUND when unknown.
   */
  setSessionTitle(id: string, title: string | null, options?: { ifUnset?: boolean }): Promise<SessionRow | undefined>;
  /** Adds usage (and its cost) to the running totals and sets context_size, atomically. */
  addTokenUsage(id: string, usage: TokenUsage, contextSize: number, costUsd?: number): Promise<void>;
  findChildByInstanceName(parentSessionId: string, instanceName: string): Promise<SessionRow | undefined>;

  /** Durable once the promise resolves. Assigns seq. */
  appendMessage(message: NewMessage): Promise<MessageRow>;
  listMessages(sessionId: string, options?: { afterSeq?: number; limit?: number }): Promise<MessageRow[]>;
  getMessage(id: string): Promise<MessageRow | undefined>;
  /** Replaces the meta of message `id` of `sessionId` (NOT_FOUND when the session has no such message). */
  updateMessageMeta(sessionId: string, id: string, meta: Record<string, unknown>): Promise<void>;
  /** Flags rows as hidden from the model (compaction); rows are never deleted. */
  setCompacted(sessionId: string, messageIds: readonly string[]): Promise<void>;

  /**
   * An assistant row and its tool-call rows (state pending), in one transaction; with
   * `spend`, the call's usage is added to the session's totals in it too (as addTokenUsage).
   */
  appendAssistantStep(message: NewMessage, calls: readonly StoredToolCall[], spend?: StepSpend): Promise<MessageRow>;
  /** A tool result row and its call's terminal state, in one transaction. */
  recordToolResult(input: { sessionId: string; callId: string; state: ToolCallState; message: NewMessage }): Promise<MessageRow>;

  /** Appends events in one transaction; assigns increasing gseq. Callers assign seq. */
  appendEvents(events: readonly NewStoredEvent[]): Promise<StoredEvent[]>;
  /** A session's events with seq > after, oldest first. */
  listEvents(sessionId: string, options?: { after?: number; limit?: number }): Promise<StoredEvent[]>;
  /** Every session's events with gseq > after, oldest first. */
  listEventsGlobal(options?: { after?: number; limit?: number }): Promise<StoredEvent[]>;
  /** The highest stored seq of a session (0 when none). */
  lastEventSeq(sessionId: string): Promise<number>;
  /** The highest stored gseq (0 when none). */
  lastEventGseq(): Promise<number>;

  upsertToolCall(call: Omit<ToolCallRow, "output" | "started_at" | "ended_at"> & Partial<ToolCallRow>): Promise<void>;
  setToolCallState(id: string, sessionId: string, state: ToolCallState, output?: string | null): Promise<void>;
  listToolCalls(sessionId: string, options?: { states?: ToolCallState[] }): Promise<ToolCallRow[]>;

  /** Messages accepted for a busy session, waiting for the next iteration boundary. */
  addInbox(item: InboxItem): Promise<void>;
  listInbox(sessionId: string): Promise<InboxItem[]>;
  /** Atomically turns inbox items into user messages (in the given order) and removes them. */
  deliverInbox(sessionId: string, deliveries: { inboxId: string; message: NewMessage }[]): Promise<MessageRow[]>;
  /** Sessions with undelivered inbox items (for recovery after a restart). */
  sessionsWithInbox(): Promise<string[]>;

  markRead(sessionId: string, path: string): Promise<void>;
  hasRead(sessionId: string, path: string): Promise<boolean>;
  /** Forgets every file the session has read (after a compaction the must-have-read gate starts afresh). */
  clearReadMarkers(sessionId: string): Promise<void>;

  setTodos(sessionId: string, todos: TodoItem[]): Promise<void>;
  getTodos(sessionId: string): Promise<TodoItem[]>;

  setWakeup(row: WakeupRow): Promise<void>;
  getWakeup(sessionId: string): Promise<WakeupRow | undefined>;
  deleteWakeup(sessionId: string): Promise<void>;
  listWakeups(): Promise<WakeupRow[]>;

  /** Small per-session key/value facts (contact baselines, activated tools…). */
  setSessionMeta(sessionId: string, key: string, value: unknown): Promise<void>;
  getSessionMeta<T = unknown>(sessionId: string, key: string): Promise<T | undefined>;

  addAudit(row: Omit<AuditRow, "id" | "created_at">): Promise<void>;
  listAudit(filter?: { sessionId?: string; kind?: string }): Promise<AuditRow[]>;

  close(): Promise<void>;
}
