import { systemClock, type Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { VeilError } from "../../errors.js";
import type {
  AuditRow,
  InboxItem,
  MessageRow,
  NewMessage,
  NewSession,
  NewStoredEvent,
  SessionPatch,
  SessionRow,
  SessionStatus,
  Store,
  StoredEvent,
  StoredToolCall,
  TodoItem,
  TokenUsage,
  ToolCallRow,
  ToolCallState,
  WakeupRow,
} from "../store.js";
import { checkDatabaseUrl, DEFAULT_RETRY, type RetryPolicy } from "./connection.js";
import { Database, type Queryable } from "./database.js";
import { applyPgMigrations } from "./migrations.js";
import { auditFromRaw, inboxFromRaw, messageFromPg, sessionFromRaw, toJson, type PgMessage, type RawAudit, type RawInbox, type RawSession } from "./rows.js";
import { SESSION_COLUMNS, SESSION_PATCH_COLUMNS, USAGE_COLUMNS } from "./sql.js";

export interface PostgresStoreOptions {
  /** Source of timestamps and retry waits. default: systemClock */
  clock?: Clock;
  log?: Logger;
  /** Connections in the pool at most. default: 10 */
  poolSize?: number;
  /** Wait for one new connection, ms. default: 5000 */
  connectTimeoutMs?: number;
  /** Backoff while the server is unreachable (at start and for each checkout). default: 6 attempts, 250 ms doubling to 4 s */
  retry?: Partial<RetryPolicy>;
}

/**
 * The networked Store: a pool of connections to one PostgreSQL database, shared by every
 * node of a service. Single-statement writes rely on row locks; multi-row writes run in
 * one transaction. Open it with `PostgresStore.open(url)`, which migrates first.
 */
export class PostgresStore implements Store {
  protected readonly db: Database;
  protected readonly clock: Clock;
  private closed = false;

  protected constructor(db: Database, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  /**
   * Connects (retrying with backoff while the server is down), migrates under an advisory
   * lock so nodes may start together, and returns the store. Errors name the URL with the
   * password hidden: CONFIG_ERROR for a wrong URL, user or database, STORE_UNAVAILABLE when
   * the server stays unreachable.
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    checkDatabaseUrl(url);
    const clock = options.clock ?? systemClock;
    const db = new Database({ url, poolSize: options.poolSize, connectTimeoutMs: options.connectTimeoutMs, log: options.log, clock, retry: { ...DEFAULT_RETRY, ...options.retry } });
    try {
      const client = await db.connect();
      try {
        await applyPgMigrations(client, new Date(clock.now()).toISOString());
      } finally {
        client.release();
      }
    } catch (error) {
      await db.end().catch(() => undefined);
      throw db.fail(error, "migrate");
    }
    return new PostgresStore(db, clock);
  }

  /** The database URL with the password hidden (for logs and /health). */
  get url(): string {
    return this.db.safeUrl;
  }

  async createSession(session: NewSession): Promise<SessionRow> {
    const { rows } = await this.guard(`session ${session.id}`, undefined, () =>
      this.db.run<RawSession>("insertSession", [
        session.id,
        session.agent,
        session.mode,
        session.status ?? "idle",
        session.parent_session_id ?? null,
        session.spawn_depth ?? 0,
        session.instance_name ?? null,
        session.model ?? null,
        toJson(session.reasoning),
        toJson(session.budget_override),
        session.objective ?? null,
        session.success_criteria ?? null,
        this.nowIso(),
      ]),
    );
    return sessionFromRaw(rows[0]!);
  }

  async getSession(id: string): Promise<SessionRow | undefined> {
    const { rows } = await this.guard("get session", id, () => this.db.run<RawSession>("getSession", [id]));
    return rows[0] && sessionFromRaw(rows[0]);
  }

  async listSessions(filter: { parentSessionId?: string; status?: SessionStatus } = {}): Promise<SessionRow[]> {
    const { rows } = await this.guard("list sessions", undefined, () =>
      this.db.run<RawSession>("listSessions", [filter.parentSessionId ?? null, filter.status ?? null]),
    );
    return rows.map(sessionFromRaw);
  }

  async updateSession(id: string, patch: SessionPatch): Promise<SessionRow> {
    // Only the keys present are set: undefined keeps, null clears.
    const sets: string[] = [];
    const values: unknown[] = [id, this.nowIso()];
    const set = (column: string, value: unknown) => {
      values.push(value);
      sets.push(`${column} = $${values.length}`);
    };
    for (const key of SESSION_PATCH_COLUMNS) {
      if (patch[key] === undefined) continue;
      set(key, key === "reasoning" || key === "budget_override" ? toJson(patch[key]) : patch[key]);
    }
    if (patch.token_usage) for (const column of USAGE_COLUMNS) set(column, patch.token_usage[column]);
    const text = `UPDATE sessions SET ${[...sets, "updated_at = $2"].join(", ")} WHERE id = $1 RETURNING ${SESSION_COLUMNS}`;
    const { rows } = await this.guard("update session", id, () => this.db.sql<RawSession>(text, values));
    if (!rows[0]) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${id}`);
    return sessionFromRaw(rows[0]);
  }

  async addTokenUsage(id: string, usage: TokenUsage, contextSize: number, costUsd = 0): Promise<void> {
    const cost = Number.isFinite(costUsd) ? costUsd : 0;
    const result = await this.guard("add token usage", id, () =>
      this.db.run("addTokenUsage", [id, ...USAGE_COLUMNS.map((column) => usage[column]), contextSize, this.nowIso(), cost]),
    );
    if (result.rowCount === 0) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${id}`);
  }

  async countLiveSessions(): Promise<number> {
    const { rows } = await this.guard("count sessions", undefined, () => this.db.run<{ n: number }>("countLive", []));
    return rows[0]!.n;
  }

  async findChildByInstanceName(parentSessionId: string, instanceName: string): Promise<SessionRow | undefined> {
    const { rows } = await this.guard("find child", parentSessionId, () => this.db.run<RawSession>("findChild", [parentSessionId, instanceName]));
    return rows[0] && sessionFromRaw(rows[0]);
  }

  async appendMessage(message: NewMessage): Promise<MessageRow> {
    return this.guard(`message ${message.id}`, message.session_id, () => this.insertMessage(this.db, message));
  }

  async listMessages(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<MessageRow[]> {
    const { rows } = await this.guard("list messages", sessionId, () =>
      this.db.run<PgMessage>("listMessages", [sessionId, options.afterSeq ?? 0, limitOf(options.limit)]),
    );
    return rows.map(messageFromPg);
  }

  async getMessage(id: string): Promise<MessageRow | undefined> {
    const { rows } = await this.guard("get message", undefined, () => this.db.run<PgMessage>("getMessage", [id]));
    return rows[0] && messageFromPg(rows[0]);
  }

  async updateMessageMeta(id: string, meta: Record<string, unknown>): Promise<void> {
    const result = await this.guard("update message meta", undefined, () => this.db.run("updateMessageMeta", [id, toJson(meta)]));
    if (result.rowCount === 0) throw new VeilError("NOT_FOUND", `Message not found: ${id}`);
  }

  async setCompacted(sessionId: string, messageIds: readonly string[]): Promise<void> {
    await this.guard("set compacted", sessionId, () => this.db.run("setCompacted", [sessionId, messageIds]));
  }

  async appendAssistantStep(message: NewMessage, calls: readonly StoredToolCall[]): Promise<MessageRow> {
    return this.guard(`message ${message.id}`, message.session_id, () =>
      this.db.transaction(async (tx) => {
        const row = await this.insertMessage(tx, message);
        for (const call of calls) {
          await tx.run("upsertToolCall", [call.id, message.session_id, row.id, call.name, call.arguments, "pending", null, null, null]);
        }
        return row;
      }),
    );
  }

  async recordToolResult(input: { sessionId: string; callId: string; state: ToolCallState; message: NewMessage }): Promise<MessageRow> {
    return this.guard(`message ${input.message.id}`, input.sessionId, () =>
      this.db.transaction(async (tx) => {
        const row = await this.insertMessage(tx, input.message);
        await this.setCallState(tx, input.callId, input.sessionId, input.state, input.message.content ?? null);
        return row;
      }),
    );
  }

  async appendEvents(events: readonly NewStoredEvent[]): Promise<StoredEvent[]> {
    if (events.length === 0) return [];
    const { rows } = await this.guard(`events of ${events[0]!.session_id}`, undefined, () =>
      this.db.run<{ gseq: number }>("appendEvents", [
        events.map((e) => e.session_id),
        events.map((e) => e.seq),
        events.map((e) => e.type),
        events.map((e) => e.ts),
        events.map((e) => e.data),
      ]),
    );
    // gseq = base + position, so ascending gseq is input order.
    const gseqs = rows.map((r) => r.gseq).sort((a, b) => a - b);
    return events.map((event, i) => ({ gseq: gseqs[i]!, ...event }));
  }

  async listEvents(sessionId: string, options: { after?: number; limit?: number } = {}): Promise<StoredEvent[]> {
    const { rows } = await this.guard("list events", sessionId, () =>
      this.db.run<StoredEvent>("listEvents", [sessionId, options.after ?? 0, limitOf(options.limit)]),
    );
    return rows;
  }

  async listEventsGlobal(options: { after?: number; limit?: number } = {}): Promise<StoredEvent[]> {
    const { rows } = await this.guard("list events", undefined, () => this.db.run<StoredEvent>("listEventsGlobal", [options.after ?? 0, limitOf(options.limit)]));
    return rows;
  }

  async lastEventSeq(sessionId: string): Promise<number> {
    const { rows } = await this.guard("last event seq", sessionId, () => this.db.run<{ n: number }>("lastEventSeq", [sessionId]));
    return rows[0]!.n;
  }

  async lastEventGseq(): Promise<number> {
    const { rows } = await this.guard("last event gseq", undefined, () => this.db.run<{ n: number }>("lastEventGseq", []));
    return rows[0]!.n;
  }

  async upsertToolCall(call: Omit<ToolCallRow, "output" | "started_at" | "ended_at"> & Partial<ToolCallRow>): Promise<void> {
    await this.guard(`tool call ${call.id}`, call.session_id, () =>
      this.db.run("upsertToolCall", [
        call.id,
        call.session_id,
        call.message_id,
        call.name,
        call.arguments,
        call.state,
        call.output ?? null,
        call.started_at ?? null,
        call.ended_at ?? null,
      ]),
    );
  }

  async setToolCallState(id: string, sessionId: string, state: ToolCallState, output?: string | null): Promise<void> {
    const result = await this.guard("set tool call state", sessionId, () => this.setCallState(this.db, id, sessionId, state, output));
    if (result === 0) throw new VeilError("NOT_FOUND", `Tool call not found: ${id} in session ${sessionId}`);
  }

  async listToolCalls(sessionId: string, options: { states?: ToolCallState[] } = {}): Promise<ToolCallRow[]> {
    const { rows } = await this.guard("list tool calls", sessionId, () => this.db.run<ToolCallRow>("listToolCalls", [sessionId, options.states ?? null]));
    return rows;
  }

  async addInbox(item: InboxItem): Promise<void> {
    await this.guard(`inbox item ${item.id}`, item.session_id, () =>
      this.db.run("addInbox", [item.id, item.session_id, item.content, toJson(item.meta), item.created_at]),
    );
  }

  async listInbox(sessionId: string): Promise<InboxItem[]> {
    const { rows } = await this.guard("list inbox", sessionId, () => this.db.run<RawInbox>("listInbox", [sessionId]));
    return rows.map(inboxFromRaw);
  }

  async deliverInbox(sessionId: string, deliveries: { inboxId: string; message: NewMessage }[]): Promise<MessageRow[]> {
    return this.guard("deliver inbox", sessionId, () =>
      this.db.transaction(async (tx) => {
        const rows: MessageRow[] = [];
        for (const { inboxId, message } of deliveries) {
          // The DELETE waits on a racing delivery's row lock, then finds the item gone: skip it.
          const taken = await tx.run("takeInbox", [inboxId, sessionId]);
          if (taken.rowCount === 0) continue;
          rows.push(await this.insertMessage(tx, message));
        }
        return rows;
      }),
    );
  }

  async sessionsWithInbox(): Promise<string[]> {
    const { rows } = await this.guard("sessions with inbox", undefined, () => this.db.run<{ session_id: string }>("sessionsWithInbox", []));
    return rows.map((r) => r.session_id);
  }

  async markRead(sessionId: string, path: string): Promise<void> {
    await this.guard("mark read", sessionId, () => this.db.run("markRead", [sessionId, path, this.nowIso()]));
  }

  async hasRead(sessionId: string, path: string): Promise<boolean> {
    const result = await this.guard("has read", sessionId, () => this.db.run("hasRead", [sessionId, path]));
    return result.rowCount !== 0;
  }

  async setTodos(sessionId: string, todos: TodoItem[]): Promise<void> {
    await this.guard("set todos", sessionId, () =>
      this.db.transaction(async (tx) => {
        await tx.run("deleteTodos", [sessionId]);
        if (todos.length === 0) return;
        await tx.run("insertTodos", [
          sessionId,
          todos.map((t) => t.id),
          todos.map((t) => t.content),
          todos.map((t) => t.status),
          todos.map((t) => t.priority),
        ]);
      }),
    );
  }

  async getTodos(sessionId: string): Promise<TodoItem[]> {
    const { rows } = await this.guard("get todos", sessionId, () => this.db.run<TodoItem>("getTodos", [sessionId]));
    return rows;
  }

  async setWakeup(row: WakeupRow): Promise<void> {
    await this.guard("set wake-up", row.session_id, () =>
      this.db.run("setWakeup", [row.session_id, row.time, row.interval_ms, row.message, row.loop, row.next_fire_at, row.created_at]),
    );
  }

  async getWakeup(sessionId: string): Promise<WakeupRow | undefined> {
    const { rows } = await this.guard("get wake-up", sessionId, () => this.db.run<WakeupRow>("getWakeup", [sessionId]));
    return rows[0];
  }

  async deleteWakeup(sessionId: string): Promise<void> {
    await this.guard("delete wake-up", sessionId, () => this.db.run("deleteWakeup", [sessionId]));
  }

  async listWakeups(): Promise<WakeupRow[]> {
    const { rows } = await this.guard("list wake-ups", undefined, () => this.db.run<WakeupRow>("listWakeups", []));
    return rows;
  }

  /** Any JSON value; `undefined` deletes the key (JSON has no undefined). */
  async setSessionMeta(sessionId: string, key: string, value: unknown): Promise<void> {
    await this.guard("set session meta", sessionId, () =>
      value === undefined
        ? this.db.run("deleteMeta", [sessionId, key])
        : this.db.run("setMeta", [sessionId, key, JSON.stringify(value), this.nowIso()]),
    );
  }

  async getSessionMeta<T = unknown>(sessionId: string, key: string): Promise<T | undefined> {
    const { rows } = await this.guard("get session meta", sessionId, () => this.db.run<{ value: string }>("getMeta", [sessionId, key]));
    return rows[0] === undefined ? undefined : (JSON.parse(rows[0].value) as T);
  }

  async addAudit(row: Omit<AuditRow, "id" | "created_at">): Promise<void> {
    await this.guard("add audit", row.session_id ?? undefined, () =>
      this.db.run("addAudit", [row.session_id, row.kind, JSON.stringify(row.data ?? {}), this.nowIso()]),
    );
  }

  async listAudit(filter: { sessionId?: string; kind?: string } = {}): Promise<AuditRow[]> {
    const { rows } = await this.guard("list audit", filter.sessionId, () => this.db.run<RawAudit>("listAudit", [filter.sessionId ?? null, filter.kind ?? null]));
    return rows.map(auditFromRaw);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.end();
  }

  /** Inserts one message on `on` (the pool, or a transaction) and returns the full row. */
  protected async insertMessage(on: Queryable, message: NewMessage): Promise<MessageRow> {
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
      created_at: this.nowIso(),
    };
    const { rows } = await on.run<{ seq: number }>("insertMessage", [
      row.id,
      row.session_id,
      row.role,
      row.content,
      row.thinking,
      toJson(row.tool_calls),
      row.tool_call_id,
      row.finish_reason,
      toJson(row.token_usage),
      toJson(row.meta),
      row.kind,
      row.created_at,
    ]);
    if (!rows[0]) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${message.session_id} (message ${message.id})`);
    return { ...row, seq: rows[0].seq };
  }

  /** Sets a call's state on `on`; returns the number of rows changed (0: no such call). */
  protected async setCallState(on: Queryable, id: string, sessionId: string, state: ToolCallState, output?: string | null): Promise<number> {
    const result = await on.run("setToolCallState", [id, sessionId, state, output !== undefined, output ?? null, this.nowIso()]);
    return result.rowCount ?? 0;
  }

  /** Runs one store operation: refuses after close, maps driver errors to catalogue errors. */
  protected async guard<T>(what: string, sessionId: string | undefined, body: () => Promise<T>): Promise<T> {
    if (this.closed) throw new VeilError("INTERNAL_ERROR", "The store is closed");
    try {
      return await body();
    } catch (error) {
      throw this.db.fail(error, what, sessionId);
    }
  }

  protected nowIso(): string {
    return new Date(this.clock.now()).toISOString();
  }
}

/** LIMIT NULL is no limit. */
function limitOf(limit: number | undefined): number | null {
  return limit === undefined ? null : Math.max(0, Math.floor(limit));
}
