import type { ToolServices } from "./services.js";
import type { Logger } from "../base/log.js";
import type { TSchema, Static } from "../schema.js";
import type { AgentConfig, ModelInfo, Settings, VeilPaths } from "../config/types.js";
import type { Clock } from "../base/clock.js";
import type { VeilEventBody } from "../base/events.js";
import type { SessionPatch, SessionRow, TodoItem, WakeupRow } from "../store/store.js";
import type { ContentPart } from "../llm/types.js";

/** A multimodal piece returned by a tool; reaches the model, never the store. */
export interface Attachment {
  type: "image" | "audio";
  /** e.g. "image/png", "audio/wav" */
  media_type: string;
  /** base64 without prefix */
  data?: string;
  url?: string;
}

export interface ToolOutcome {
  /** Text for the model; also what the store keeps. */
  output: string;
  /** Multimodal parts for the current turn only (not stored). */
  attachments?: Attachment[];
  /** Structured facts for events and the dashboard. */
  details?: Record<string, unknown>;
  /** Marks a failure that is not an exception (rendered as success=false). */
  isError?: boolean;
}

/**
 * Something a tool keeps per session or per runtime (a shell, a cache). It is
 * disposed when its owner ends: the session closes, or the runtime shuts down.
 */
export interface Disposable {
  dispose(): void | Promise<void>;
}

export interface ResourceScope {
  /** Returns the resource under `key`, creating it on first use. */
  get<T extends Disposable>(key: string, create: () => T): T;
  peek<T extends Disposable>(key: string): T | undefined;
}

/**
 * Runtime services some tools need. Each is optional so a runtime (or a test)
 * wires only what it has; a tool that needs a missing one throws TOOL_CONTEXT_INVALID.
 */
export type { ToolServices } from "./services.js";

/** Events a tool publishes for its session beside its own chunks (todo_write's list, the sandbox proxy's refusals). */
export type ToolEventBody = Extract<VeilEventBody, { type: "todo.updated" | "sandbox.blocked" }>;

/**
 * What one tool call may write of its session: its side tables (todos, read markers, audit
 * rows) and its events, nothing else. The run's recorder hands these out over the run's
 * fenced store, so a node that lost the session's lease can write none of them.
 */
/** Writes one session's wake-up row. */
export interface WakeupRowWrites {
  set(row: WakeupRow): Promise<void>;
  delete(): Promise<void>;
}

/**
 * What a call writes of sessions other than its own (a child's budget, its contact marks on a
 * child): a run that lost its own session to another writer writes none of them.
 */
export interface OtherSessionWrites {
  update(sessionId: string, patch: SessionPatch): Promise<SessionRow>;
  setMeta(sessionId: string, key: string, value: unknown): Promise<void>;
  /** An audit row on that session (agent_control's summary of a child). */
  audit(sessionId: string, kind: string, data: Record<string, unknown>): Promise<void>;
}

export interface ToolWrites {
  todos: { get(): Promise<TodoItem[]>; set(todos: TodoItem[]): Promise<void> };
  /** The durable half of the must-have-read gate (survives a restart). */
  readMarkers: { mark(path: string): Promise<void>; has(path: string): Promise<boolean> };
  /** Its session's stored wake-up row (the wake-up service arms the timer; the row is the run's write). */
  wakeupRow: WakeupRowWrites;
  otherSessions: OtherSessionWrites;
  /** An audit row of this session (memory_write, log_write). */
  audit(kind: string, data: Record<string, unknown>): Promise<void>;
  /** Streams live output as `tool.chunk`. */
  emitChunk(chunk: string): void;
  /** Publishes one of the tool events for this session; resolves once it is stored and delivered. */
  emit(body: ToolEventBody): Promise<void>;
}

export interface ToolContext extends ToolWrites {
  sessionId: string;
  agent: AgentConfig;
  mode: string;
  /** Absolute workspace root. */
  workspace: string;
  /** Where the runtime keeps its files (the path guard protects them; memory files live under memoryDir). */
  paths: VeilPaths;
  settings: Settings;
  /** Resolved model key for this turn (per-call > session > agent > settings). */
  modelKey: string;
  model: ModelInfo;
  toolCallId: string;
  clock: Clock;
  /** Aborted on cancel, session close, or the tool's timeout. */
  signal: AbortSignal;
  /** Resources owned by this session (disposed at close). */
  session: ResourceScope;
  /** Resources owned by the runtime (disposed at shutdown). */
  runtime: ResourceScope;
  services: ToolServices;
  log: Logger;
}

export type { Logger } from "../base/log.js";

/** What a tool may read to say which paths a call touches. */
export type TouchScope = Pick<ToolContext, "workspace" | "paths" | "agent">;

export interface ToolDefinition<S extends TSchema = TSchema> {
  /** snake_case, unique. */
  name: string;
  /** What the model reads. */
  description: string;
  params: S;
  /** Watchdog, ms. default: none for built-ins that manage their own time. */
  timeoutMs?: number;
  /** True when the tool changes nothing (lets the loop run it in parallel freely). */
  readOnly?: boolean;
  /**
   * The absolute paths a call with this (schema-valid) input writes. Calls of one response
   * that share a path run one after another, in the order the model wrote them; a tool that
   * declares nothing runs alongside every other call.
   */
  touches?(input: Static<S>, scope: TouchScope): string[];
  execute(input: Static<S>, ctx: ToolContext): Promise<ToolOutcome | string>;
  /** The file or folder a call works on (see RegisteredTool.reaches). */
  reaches?(input: Static<S>): string | undefined;
  /** Work the first call would otherwise pay, done ahead (see RegisteredTool.warmUp). */
  warmUp?(ctx: ToolContext): void;
}

/** A defined tool with its validator compiled once. */
export interface RegisteredTool {
  name: string;
  description: string;
  /** The JSON Schema calls are validated against (and tool_search shows). */
  inputSchema: Record<string, unknown>;
  /** What the model is sent instead of inputSchema, when shorter (built-ins: see model-schema.ts). */
  modelSchema?: Record<string, unknown>;
  timeoutMs?: number;
  readOnly: boolean;
  /** See ToolDefinition.touches; called with input that passed validate(). */
  touches?(input: Record<string, unknown>, scope: TouchScope): string[];
  tier: "builtin" | "custom";
  /** For custom tools: the folder tier and folder, or the MCP server and its own tool name. */
  source?: { scope: "agent" | "project" | "global"; folder: string } | { scope: "mcp"; server: string; tool: string };
  /** Returns null when valid, else a message phrased for the model. */
  validate(input: unknown): string | null;
  execute(input: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome | string>;
  /**
   * The file or folder a call works on, as the model gave it (absolute or workspace-relative):
   * file tools declare it so the AGENTS.md of a folder they reach can be added to the result.
   */
  reaches?(input: Record<string, unknown>): string | undefined;
  /**
   * Work the first call of a process would otherwise pay (starting a process, loading a
   * module), started while the model thinks about the turn's first request. It must be
   * invisible: the state it leaves is what a first call would create, it never throws, and
   * nothing it starts outlives the session's resources.
   */
  warmUp?(ctx: ToolContext): void;
}

export type { ContentPart };
