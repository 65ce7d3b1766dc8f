import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type Database from "better-sqlite3";
import { systemClock, type Clock } from "../../base/clock.js";
import { VeilError } from "../../errors.js";
import type {
  InboxItem,
  MessageRow,
  NewMessage,
  NewSession,
  NewStoredEvent,
  SessionFilter,
  SessionPatch,
  SessionRow,
  Store,
  StoredEvent,
  StepSpend,
  StoredToolCall,
  TokenUsage,
  ToolCallRow,
  ToolCallState,
} from "../store.js";
import { applyMigrations } from "./migrations.js";
import { openDatabase } from "./driver.js";
import { mapSqliteError } from "./sqlite-errors.js";
import {
  inboxFromRaw,
  messageFromRaw,
  sessionFromRaw,
  toJson,
  type RawInbox,
  type RawMessage,
  type RawSession,
} from "../rows.js";
import { SqliteAccessTables } from "./access-tables.js";

export interface SqliteStoreOptions {
  /** Source of timestamps. default: systemClock */
  clock?: Clock;
  /**
   * `NORMAL` (default) with WAL keeps every committed write across a process crash, which
   * is what "durable once the promise resolves" promises; an OS crash or power loss may
   * lose the last commits. `FULL` fsyncs each commit and survives power loss too, slower.
   */
  synchronous?: "NORMAL" | "FULL";
  /** How long a writer waits for another connection's lock, ms. default: 5000 */
  busyTimeoutMs?: number;
}

/**
 * The embedded Store: one better-sqlite3 connection per instance (sync calls wrapped in
 * promises so callers stay ready for a networked store). Several instances, in this
 * process or others, may share one file: WAL lets readers run beside the single writer.
 */
export class SqliteStore extends SqliteAccessTables implements Store {
  private readonly deliverTx: (sessionId: string, deliveries: { inboxId: string; message: NewMessage }[]) => MessageRow[];
  private readonly assistantStepTx: (message: NewMessage, calls: readonly StoredToolCall[], spend?: StepSpend) => MessageRow;
  private readonly toolResultTx: (input: { sessionId: string; callId: string; state: ToolCallState; message: NewMessage }) => MessageRow;
  private readonly eventsTx: (events: readonly NewStoredEvent[]) => StoredEvent[];
  private readonly compactedTx: (sessionId: string, ids: readonly string[]) => void;

  private constructor(db: Database.Database, clock: Clock) {
    super(db, clock);
    const deliver = db.transaction((sessionId: string, deliveries: { inboxId: string; message: NewMessage }[]) => {
      const rows: MessageRow[] = [];
      for (const { inboxId, message } of deliveries) {
        // Another delivery already took this item: skip it, so nothing is delivered twice.
        if (this.stmts.takeInbox.run(inboxId, sessionId).changes === 0) continue;
        rows.push(this.insertMessage(message));
      }
      return rows;
    });
    // IMMEDIATE: take the write lock up front so two connections never both read-then-upgrade.
    this.deliverTx = (sessionId, deliveries) => deliver.immediate(sessionId, deliveries);
    const assistantStep = db.transaction((message: NewMessage, calls: readonly StoredToolCall[], spend?: StepSpend) => {
      if (spend) this.addUsageNow(message.session_id, spend);
      const row = this.insertMessage(message);
      for (const call of calls) {
        this.stmts.upsertToolCall.run({
          id: call.id, session_id: message.session_id, message_id: row.id, name: call.name,
          arguments: call.arguments, state: "pending", output: null, started_at: null, ended_at: null,
        });
      }
      return row;
    });
    this.assistantStepTx = (message, calls, spend) => {
      try {
        return assistantStep.immediate(message, calls, spend);
      } catch (error) {
        throw mapSqliteError(error, `message ${message.id}`, message.session_id);
      }
    };
    const toolResult = db.transaction((input: { sessionId: string; callId: string; state: ToolCallState; message: NewMessage }) => {
      const row = this.insertMessage(input.message);
      this.stmts.setToolCallState.run({ id: input.callId, session_id: input.sessionId, state: input.state, has_output: 1, output: input.message.content ?? null, now: this.nowIso() });
      return row;
    });
    this.toolResultTx = (input) => toolResult.immediate(input);
    const events = db.transaction((list: readonly NewStoredEvent[]) =>
      list.map((event) => ({ ...event, gseq: (this.stmts.insertEvent.get(event) as { gseq: number }).gseq })),
    );
    this.eventsTx = (list) => events.immediate(list);
    const compacted = db.transaction((sessionId: string, ids: readonly string[]) => {
      for (const id of ids) this.stmts.setCompacted.run(sessionId, id);
    });
    this.compactedTx = (sessionId, ids) => compacted.immediate(sessionId, ids);
  }

  /** Opens (creating the file and its parent folder if needed) and migrates the database. */
  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    const clock = options.clock ?? systemClock;
    if (path !== ":memory:" && !path.startsWith("file:")) mkdirSync(dirname(path), { recursive: true });
    const db = openDatabase(path);
    try {
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${options.synchronous ?? "NORMAL"}`);
      db.pragma("foreign_keys = ON");
      // Case-insensitive search as JavaScript folds case: SQLite's own lower() folds ASCII only.
      db.function("veil_fold", { deterministic: true }, (text: unknown) => (typeof text === "string" ? text.toLowerCase() : text));
      applyMigrations(db, new Date(clock.now()).toISOString());
      return new SqliteStore(db, clock);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  /** The underlying connection, for diagnostics and tests (pragmas, schema checks). */
  get connection(): Database.Database {
    return this.db;
  }

  async createSession(session: NewSession): Promise<SessionRow> {
    this.assertOpen();
    try {
      const raw = this.stmts.insertSession.get({
        id: session.id,
        agent: session.agent,
        mode: session.mode,
        status: session.status ?? "idle",
        parent_session_id: session.parent_session_id ?? null,
        spawn_depth: session.spawn_depth ?? 0,
        instance_name: session.instance_name ?? null,
        model: session.model ?? null,
        reasoning: toJson(session.reasoning),
        budget_override: toJson(session.budget_override),
        objective: session.objective ?? null,
        success_criteria: session.success_criteria ?? null,
        title: session.title ?? null,
        origin: session.origin ?? "api",
        ephemeral: session.ephemeral ? 1 : 0,
        forked_from: session.forked_from ?? null,
        owner_key: session.owner_key ?? null,
        now: this.nowIso(),
      }) as RawSession;
      return sessionFromRaw(raw);
    } catch (error) {
      throw mapSqliteError(error, `session ${session.id}`);
    }
  }

  async getSession(id: string): Promise<SessionRow | undefined> {
    this.assertOpen();
    const raw = this.stmts.getSession.get(id) as RawSession | undefined;
    return raw && sessionFromRaw(raw);
  }

  async listSessions(filter: SessionFilter = {}): Promise<SessionRow[]> {
    this.assertOpen();
    const statement = filter.ownerKey === undefined ? this.stmts.listSessions : this.stmts.listOwnedSessions;
    const rows = statement.all({
      ...(filter.ownerKey === undefined ? {} : { owner: filter.ownerKey }),
      parent: filter.parentSessionId ?? null,
      status: filter.status ?? null,
      query: filter.query ? filter.query.toLowerCase() : null,
      by_activity: filter.order === "activity" ? 1 : 0,
      limit: limitOf(filter.limit),
    }) as RawSession[];
    return rows.map(sessionFromRaw);
  }

  async setSessionTitle(id: string, title: string | null, options: { ifUnset?: boolean } = {}): Promise<SessionRow | undefined> {
    this.assertOpen();
    const raw = this.stmts.setTitle.get({ id, title, if_unset: options.ifUnset ? 1 : 0 }) as RawSession | undefined;
    if (raw) return sessionFromRaw(raw);
    if (!this.stmts.getSession.get(id)) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${id}`);
    return undefined;
  }

  async updateSession(id: string, patch: SessionPatch): Promise<SessionRow> {
    this.assertOpen();
    const usage = patch.token_usage;
    const raw = this.stmts.updateSession.get({
      id,
      now: this.nowIso(),
      has_status: flag(patch.status),
      status: patch.status ?? null,
      has_model: flag(patch.model),
      model: patch.model ?? null,
      has_reasoning: flag(patch.reasoning),
      reasoning: toJson(patch.reasoning),
      has_budget: flag(patch.budget_override),
      budget_override: toJson(patch.budget_override),
      has_usage: flag(usage),
      prompt_tokens: usage?.prompt_tokens ?? 0,
      completion_tokens: usage?.completion_tokens ?? 0,
      total_tokens: usage?.total_tokens ?? 0,
      cached_tokens: usage?.cached_tokens ?? 0,
      cache_creation_tokens: usage?.cache_creation_tokens ?? 0,
      reasoning_tokens: usage?.reasoning_tokens ?? 0,
      has_context: flag(patch.context_size),
      context_size: patch.context_size ?? 0,
      has_ephemeral: flag(patch.ephemeral),
      ephemeral: patch.ephemeral ? 1 : 0,
    }) as RawSession | undefined;
    if (!raw) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${id}`);
    return sessionFromRaw(raw);
  }

  async addTokenUsage(id: string, usage: TokenUsage, contextSize: number, costUsd = 0): Promise<void> {
    this.assertOpen();
    this.addUsageNow(id, { usage, contextSize, costUsd });
  }

  private addUsageNow(id: string, { usage, contextSize, costUsd = 0 }: StepSpend): void {
    const result = this.stmts.addTokenUsage.run({
      id,
      now: this.nowIso(),
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.total_tokens,
      cached_tokens: usage.cached_tokens,
      cache_creation_tokens: usage.cache_creation_tokens,
      reasoning_tokens: usage.reasoning_tokens,
      context_size: contextSize,
      cost_usd: Number.isFinite(costUsd) ? costUsd : 0,
    });
    if (result.changes === 0) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${id}`);
  }

  async findChildByInstanceName(parentSessionId: string, instanceName: string): Promise<SessionRow | undefined> {
    this.assertOpen();
    const raw = this.stmts.findChild.get(parentSessionId, instanceName) as RawSession | undefined;
    return raw && sessionFromRaw(raw);
  }

  async appendMessage(message: NewMessage): Promise<MessageRow> {
    this.assertOpen();
    return this.insertMessage(message);
  }

  async listMessages(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<MessageRow[]> {
    this.assertOpen();
    const limit = options.limit === undefined ? -1 : Math.max(0, Math.floor(options.limit));
    const rows = this.stmts.listMessages.all(sessionId, options.afterSeq ?? 0, limit) as RawMessage[];
    return rows.map(messageFromRaw);
  }

  async getMessage(id: string): Promise<MessageRow | undefined> {
    this.assertOpen();
    const raw = this.stmts.getMessage.get(id) as RawMessage | undefined;
    return raw && messageFromRaw(raw);
  }

  async updateMessageMeta(sessionId: string, id: string, meta: Record<string, unknown>): Promise<void> {
    this.assertOpen();
    if (this.stmts.updateMessageMeta.run(toJson(meta), id, sessionId).changes === 0) {
      throw new VeilError("NOT_FOUND", `Message not found: ${id}`);
    }
  }

  async setCompacted(sessionId: string, messageIds: readonly string[]): Promise<void> {
    this.assertOpen();
    this.compactedTx(sessionId, messageIds);
  }

  async appendAssistantStep(message: NewMessage, calls: readonly StoredToolCall[], spend?: StepSpend): Promise<MessageRow> {
    this.assertOpen();
    return this.assistantStepTx(message, calls, spend);
  }

  async recordToolResult(input: { sessionId: string; callId: string; state: ToolCallState; message: NewMessage }): Promise<MessageRow> {
    this.assertOpen();
    return this.toolResultTx(input);
  }

  async appendEvents(events: readonly NewStoredEvent[]): Promise<StoredEvent[]> {
    this.assertOpen();
    if (events.length === 0) return [];
    try {
      return this.eventsTx(events);
    } catch (error) {
      throw mapSqliteError(error, `events of ${events[0]!.session_id}`);
    }
  }

  async listEvents(sessionId: string, options: { after?: number; limit?: number } = {}): Promise<StoredEvent[]> {
    this.assertOpen();
    return this.stmts.listEvents.all(sessionId, options.after ?? 0, limitOf(options.limit)) as StoredEvent[];
  }

  async listEventsGlobal(options: { after?: number; limit?: number } = {}): Promise<StoredEvent[]> {
    this.assertOpen();
    return this.stmts.listEventsGlobal.all(options.after ?? 0, limitOf(options.limit)) as StoredEvent[];
  }

  async lastEventSeq(sessionId: string): Promise<number> {
    this.assertOpen();
    return (this.stmts.lastEventSeq.get(sessionId) as { n: number }).n;
  }

  async lastEventGseq(): Promise<number> {
    this.assertOpen();
    return (this.stmts.lastEventGseq.get() as { n: number }).n;
  }

  async upsertToolCall(
    call: Omit<ToolCallRow, "output" | "started_at" | "ended_at"> & Partial<ToolCallRow>,
  ): Promise<void> {
    this.assertOpen();
    try {
      this.stmts.upsertToolCall.run({
        id: call.id,
        session_id: call.session_id,
        message_id: call.message_id,
        name: call.name,
        arguments: call.arguments,
        state: call.state,
        output: call.output ?? null,
        started_at: call.started_at ?? null,
        ended_at: call.ended_at ?? null,
      });
    } catch (error) {
      throw mapSqliteError(error, `tool call ${call.id}`);
    }
  }

  async setToolCallState(id: string, sessionId: string, state: ToolCallState, output?: string | null): Promise<void> {
    this.assertOpen();
    const result = this.stmts.setToolCallState.run({
      id,
      session_id: sessionId,
      state,
      has_output: output === undefined ? 0 : 1,
      output: output ?? null,
      now: this.nowIso(),
    });
    if (result.changes === 0) throw new VeilError("NOT_FOUND", `Tool call not found: ${id} in session ${sessionId}`);
  }

  async listToolCalls(sessionId: string, options: { states?: ToolCallState[] } = {}): Promise<ToolCallRow[]> {
    this.assertOpen();
    return this.stmts.listToolCalls.all({
      session_id: sessionId,
      states: options.states ? JSON.stringify(options.states) : null,
    }) as ToolCallRow[];
  }

  async addInbox(item: InboxItem): Promise<void> {
    this.assertOpen();
    try {
      this.stmts.addInbox.run({ ...item, meta: toJson(item.meta) });
    } catch (error) {
      throw mapSqliteError(error, `inbox item ${item.id}`);
    }
  }

  async listInbox(sessionId: string): Promise<InboxItem[]> {
    this.assertOpen();
    return (this.stmts.listInbox.all(sessionId) as RawInbox[]).map(inboxFromRaw);
  }

  async deliverInbox(sessionId: string, deliveries: { inboxId: string; message: NewMessage }[]): Promise<MessageRow[]> {
    this.assertOpen();
    return this.deliverTx(sessionId, deliveries);
  }

  async sessionsWithInbox(): Promise<string[]> {
    this.assertOpen();
    return (this.stmts.sessionsWithInbox.all() as { session_id: string }[]).map((r) => r.session_id);
  }

  private insertMessage(message: NewMessage): MessageRow {
    const row = {
      id: message.id,
      session_id: message.session_id,
      role: message.role,
      content: message.content ?? null,
      thinking: message.thinking ?? null,
      tool_calls: message.tool_calls ?? null,
      tool_call_id: message.tool_call_id ?? null,
      finish_reason: message.finish_reason ?? null,
      token_usage: message.token_usage ?? null,
      meta: message.meta ?? null,
      kind: message.kind ?? null,
      compacted: false,
      reverted: false,
      created_at: this.nowIso(),
    };
    let seq: number;
    try {
      seq = (
        this.stmts.insertMessage.get({
          ...row,
          tool_calls: toJson(row.tool_calls),
          token_usage: toJson(row.token_usage),
          meta: toJson(row.meta),
          compacted: undefined,
          reverted: undefined,
        }) as { seq: number }
      ).seq;
    } catch (error) {
      throw mapSqliteError(error, `message ${message.id}`, message.session_id);
    }
    return { ...row, seq };
  }
}

function limitOf(limit: number | undefined): number {
  return limit === undefined ? -1 : Math.max(0, Math.floor(limit));
}

function flag(value: unknown): 0 | 1 {
  return value === undefined ? 0 : 1;
}
