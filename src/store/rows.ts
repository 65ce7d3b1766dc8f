import type {
  AuditRow,
  InboxItem,
  MessageRow,
  SessionRow,
  StoredToolCall,
  TodoItem,
  TokenUsage,
  ToolCallRow,
  WakeupRow,
} from "./store.js";
import type { CheckpointFile, CheckpointRow } from "./checkpoints.js";

/*
 * The row converters of every driver. Both schemas have the same columns with JSON kept as
 * TEXT (so a value comes back byte for byte as written); the one difference between the
 * dialects is booleans, which SQLite returns as 0/1 and PostgreSQL as real booleans. `Flag`
 * is either, and `flag()` reads both.
 */

/** A boolean column as a driver returns it: SQLite 0/1, PostgreSQL true/false. */
export type Flag = number | boolean;

export function flag(value: Flag): boolean {
  return value === true || value === 1;
}

/** Column shapes as the drivers return them. */
export interface RawSession extends TokenUsage {
  id: string;
  agent: string;
  mode: string;
  status: SessionRow["status"];
  parent_session_id: string | null;
  spawn_depth: number;
  instance_name: string | null;
  model: string | null;
  reasoning: string | null;
  budget_override: string | null;
  objective: string | null;
  success_criteria: string | null;
  context_size: number;
  cost_usd: number;
  title: string | null;
  origin: string;
  ephemeral: Flag;
  forked_from: string | null;
  owner_key: string | null;
  created_at: string;
  updated_at: string;
}

export interface RawMessage {
  id: string;
  session_id: string;
  seq: number;
  role: MessageRow["role"];
  content: string | null;
  thinking: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  finish_reason: string | null;
  token_usage: string | null;
  meta: string | null;
  kind: string | null;
  compacted: Flag;
  reverted: Flag;
  created_at: string;
}

export interface RawInbox {
  id: string;
  session_id: string;
  content: string;
  meta: string | null;
  created_at: string;
}

export interface RawWakeup extends Omit<WakeupRow, "loop"> {
  loop: Flag;
}

export interface RawAudit extends Omit<AuditRow, "data"> {
  data: string;
}

export function toJson(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

export function fromJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

export function sessionFromRaw(raw: RawSession): SessionRow {
  return {
    id: raw.id,
    agent: raw.agent,
    mode: raw.mode,
    status: raw.status,
    parent_session_id: raw.parent_session_id,
    spawn_depth: raw.spawn_depth,
    instance_name: raw.instance_name,
    model: raw.model,
    reasoning: fromJson(raw.reasoning),
    budget_override: fromJson(raw.budget_override),
    objective: raw.objective,
    success_criteria: raw.success_criteria,
    token_usage: {
      prompt_tokens: raw.prompt_tokens,
      completion_tokens: raw.completion_tokens,
      total_tokens: raw.total_tokens,
      cached_tokens: raw.cached_tokens,
      cache_creation_tokens: raw.cache_creation_tokens,
      reasoning_tokens: raw.reasoning_tokens,
    },
    context_size: raw.context_size,
    cost_usd: raw.cost_usd,
    title: raw.title,
    origin: raw.origin,
    ephemeral: flag(raw.ephemeral),
    forked_from: raw.forked_from ?? null,
    owner_key: raw.owner_key ?? null,
    created_at: raw.created_at,
    updated_at: raw.updated_at,
  };
}

export function messageFromRaw(raw: RawMessage): MessageRow {
  return {
    id: raw.id,
    session_id: raw.session_id,
    seq: raw.seq,
    role: raw.role,
    content: raw.content,
    thinking: raw.thinking,
    tool_calls: fromJson<StoredToolCall[]>(raw.tool_calls),
    tool_call_id: raw.tool_call_id,
    finish_reason: raw.finish_reason,
    token_usage: fromJson<TokenUsage>(raw.token_usage),
    meta: fromJson<Record<string, unknown>>(raw.meta),
    kind: raw.kind,
    compacted: flag(raw.compacted),
    reverted: flag(raw.reverted),
    created_at: raw.created_at,
  };
}

export function inboxFromRaw(raw: RawInbox): InboxItem {
  return { ...raw, meta: fromJson<Record<string, unknown>>(raw.meta) };
}

export function wakeupFromRaw(raw: RawWakeup): WakeupRow {
  return { ...raw, loop: flag(raw.loop) };
}

export function auditFromRaw(raw: RawAudit): AuditRow {
  return { ...raw, data: JSON.parse(raw.data) as Record<string, unknown> };
}

export type RawToolCall = ToolCallRow;
export type RawTodo = TodoItem;

export interface RawCheckpoint {
  id: string;
  session_id: string;
  message_id: string;
  kind: CheckpointRow["kind"];
  reverted: Flag;
  data: string | null;
  created_at: string;
}

export interface RawCheckpointFile {
  checkpoint_id: string;
  path: string;
  change: CheckpointFile["change"];
  before_hash: string | null;
  before_mode: number | null;
}

/** Checkpoint rows with their files (read in one query for the whole session). */
export function checkpointsFromRaw(rows: readonly RawCheckpoint[], files: readonly RawCheckpointFile[]): CheckpointRow[] {
  const byCheckpoint = new Map<string, CheckpointFile[]>();
  for (const f of files) {
    const list = byCheckpoint.get(f.checkpoint_id) ?? [];
    list.push({ path: f.path, change: f.change, before_hash: f.before_hash, before_mode: f.before_mode === null ? null : Number(f.before_mode) });
    byCheckpoint.set(f.checkpoint_id, list);
  }
  return rows.map((raw) => ({
    id: raw.id,
    session_id: raw.session_id,
    message_id: raw.message_id,
    kind: raw.kind,
    reverted: flag(raw.reverted),
    data: fromJson(raw.data),
    created_at: raw.created_at,
    files: byCheckpoint.get(raw.id) ?? [],
  }));
}
