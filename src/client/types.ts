/**
 * The wire types of Veil's HTTP API, for `veilcli/client`. Only `src/base` types are
 * imported, so the client pulls in no server code.
 */
import type { VeilEvent } from "../base/events.js";
import type { SessionStatus, TokenUsage } from "../base/usage.js";

export type { EventOf, VeilEvent, VeilEventType } from "../base/events.js";
export type { SessionStatus, TokenUsage } from "../base/usage.js";
export type { CreateSchedule, Schedule, ScheduleRun, ScheduleRunStatus } from "../base/schedules.js";

/** GET /health. */
export interface Health {
  ok: boolean;
  version: string;
  /** Whether bash and custom tools run in a sandbox (`mode` as configured; `active` false when it is off or the machine cannot make one). */
  sandbox: { mode: "auto" | "required" | "off"; active: boolean; backend: "bubblewrap" | null };
}

export interface Reasoning {
  effort?: "none" | "minimal" | "low" | "medium" | "high" | "xhigh";
  max_tokens?: number;
}

export interface BudgetOverride {
  max_tokens?: number;
  max_wall_seconds?: number;
  max_spawn_depth?: number;
  max_iterations?: number;
}

/** A session row (`GET /sessions/:id`). */
export interface Session {
  id: string;
  /** One line: given on create or by `rename`, else made from the first message; null until then. */
  title: string | null;
  agent: string;
  mode: string;
  status: SessionStatus;
  /** Who started it: "api", "run" (veil run), "openai" (agent/<name> on the OpenAI wire), "agent" (a sub-agent). */
  origin: string;
  /** A one-shot session nobody continued: closed once idle for limits.idleSessionTtl. */
  ephemeral: boolean;
  parent_session_id: string | null;
  spawn_depth: number;
  instance_name: string | null;
  model: string | null;
  reasoning: Reasoning | null;
  budget_override: BudgetOverride | null;
  context_size: number;
  /** The window of the model its next turn would use. */
  context_window: number;
  token_usage: TokenUsage;
  /** The session's spend in USD at models.json prices (0 when unpriced). */
  cost_usd: number;
  /** The session this one was forked from. */
  forked_from: string | null;
  /** The API key the session belongs to (null: made with the server secret). */
  owner_key: string | null;
  created_at: string;
  updated_at: string;
  [extra: string]: unknown;
}

export interface CreateSession {
  agent?: string;
  /** One line, at most 200 characters; absent: made from the first message. */
  title?: string;
  mode?: string;
  model?: string;
  reasoning?: Reasoning;
  budget_override?: BudgetOverride;
}

export interface SessionListFilter {
  status?: SessionStatus;
  parent?: string;
  /** Only sessions whose title, id, agent or instance name contains this text (any case). */
  q?: string;
  /** "activity" (default): most recently active first; "created": oldest first. */
  order?: "activity" | "created";
  limit?: number;
}

/** `POST /sessions/close`: the sessions now closed (those closed already included), and the ids that named none. */
export interface CloseManyResult {
  closed: Session[];
  notFound: string[];
}

export interface ChatOptions {
  model?: string;
  reasoning?: Reasoning;
  /**
   * A JSON Schema the turn's final answer must be valid against: the reply's `structured` is
   * then the parsed answer. One that never matches rejects with OUTPUT_SCHEMA_MISMATCH (502).
   */
  output_schema?: Record<string, unknown>;
  signal?: AbortSignal;
  /** A W3C traceparent: the turn's trace becomes a child of this span (when the server sends traces). */
  traceparent?: string;
}

/**
 * The sync answer of `POST /sessions/:id/chat`. `T` is the type the chat's `output_schema`
 * describes (the client takes it on trust: the server validated the value against the schema).
 */
export interface ChatReply<T = unknown> {
  content: string | null;
  finishReason: string;
  stopReason: string;
  tokenUsage: TokenUsage;
  messageId: string | null;
  /** With an `output_schema`: the final answer's parsed value. */
  structured?: T;
}

/** A stored message (`GET /sessions/:id/messages`). */
export interface Message {
  id: string;
  session_id: string;
  seq: number;
  role: "system" | "user" | "assistant" | "tool";
  content: unknown;
  /** "summary" for a compaction summary, else null. */
  kind: string | null;
  /** Hidden from the model by a compaction (never deleted). */
  compacted: boolean;
  /** Left out of the model's history by a revert (never deleted). */
  reverted: boolean;
  created_at: string;
  [extra: string]: unknown;
}

export type FileChange = "added" | "modified" | "deleted";

/** One turn that changed files (`GET /sessions/:id/checkpoints`). */
export interface Checkpoint {
  id: string;
  /** The user message that started the turn. */
  messageId: string;
  createdAt: string;
  files: { path: string; change: FileChange }[];
}

export interface Checkpoints {
  /** Turns not reverted, oldest first. */
  checkpoints: Checkpoint[];
  /** The revert an unrevert would undo now, or null. */
  revert: RevertResult | null;
  /** The user messages whose turns are reverted (their rows stay in the history, flagged). */
  reverted: string[];
}

/** What a revert (or unrevert) put back. */
export interface RevertResult {
  messageId: string;
  files: { path: string; change: FileChange }[];
}

/** The answer of `POST /sessions/:id/compact`. */
export interface CompactionResult {
  tokensBefore: number;
  tokensAfter: number;
  summaryMessageId: string | null;
}

export interface Agent {
  name: string;
  description: string;
  model: string | null;
  source: string;
  [extra: string]: unknown;
}

export interface Tool {
  name: string | null;
  description?: string;
  tier: "builtin" | "custom";
  state: string;
  input_schema?: Record<string, unknown>;
  [extra: string]: unknown;
}

/** One entry of `GET /skills`: a skill in effect or shadowed, or a broken skill folder (name null). */
export interface Skill {
  name: string | null;
  state: "active" | "shadowed" | "broken";
  scope: "agent" | "project" | "global";
  folder: string;
  file: string;
  description?: string;
  /** The other files of the skill's folder (absolute paths). */
  files?: string[];
  /** shadowed: the folder of the same-named skill in effect. */
  shadowedBy?: string;
  bytes?: number;
  truncated?: boolean;
  /** broken: what is wrong. */
  error?: string;
}

export interface Wakeup {
  time: string | number;
  message?: string;
  loop?: boolean;
  [extra: string]: unknown;
}

export interface StreamToken {
  token: string;
  expiresAt: string;
  path?: string;
}

export interface EventStreamOptions {
  /** Only this session's events (its per-session `seq` is then the SSE id). */
  session?: string;
  /** Replay what came after this id first (a per-session seq with `session`, else a global gseq). */
  lastEventId?: number;
  /** Ends the stream (the iterator finishes). */
  signal?: AbortSignal;
  /** First reconnect delay, ms; doubles up to maxRetryMs. default: 250 */
  retryMs?: number;
  /** default: 5000 */
  maxRetryMs?: number;
}

/** What an event stream iterator yields. */
export type StreamedEvent = VeilEvent;

/** An outbound webhook delivery (`GET /webhooks/deliveries`). */
export interface WebhookDelivery {
  deliveryId: string;
  url: string;
  type: "chat.done" | "method.pending" | "session.budget";
  sessionId: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export type KeyScope = "read" | "chat" | "admin";

/** `POST /keys`: what a new API key may do. */
export interface CreateKey {
  name: string;
  scopes: KeyScope[];
  /** The only agents it may start (default: any). */
  agents?: string[];
  requestsPerMinute?: number;
  budgetUsd?: number;
  /** ISO time after which it stops working. */
  expiresAt?: string;
}

/** An API key as listed: never its value (only `prefix`, its first characters). */
export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scopes: KeyScope[];
  agents: string[] | null;
  requestsPerMinute: number | null;
  budgetUsd: number | null;
  /** What its sessions cost so far, USD. */
  spentUsd: number;
  expiresAt: string | null;
  createdAt: string;
  revokedAt: string | null;
}

/** One request that changed something (or tried to). */
export interface AuditEntry {
  seq: number;
  at: string;
  /** The key id, or "admin" for the server secret. */
  key: string;
  method: string;
  path: string;
  status: number;
  sessionId?: string;
}
