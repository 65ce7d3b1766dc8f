import type { Clock } from "../../base/clock.js";
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
import type { Lease } from "../cluster.js";
import type { Database, Queryable } from "./database.js";
import type { FenceableStatement } from "./fenced-sql.js";
import { PgAccessTables } from "./pg-access-tables.js";
import { updateSessionFence } from "./fenced-sql.js";
import { inboxFromRaw, messageFromRaw, sessionFromRaw, toJson, type RawInbox, type RawMessage, type RawSession } from "../rows.js";
import { SESSION_COLUMNS, SESSION_PATCH_COLUMNS, USAGE_COLUMNS } from "./sql.js";

/**
 * The Store over PostgreSQL: a pool of connections to one database, shared by every node
 * of a service. Single-statement writes rely on row locks; multi-row writes run in one
 * statement or one transaction. PostgresStore (postgres-store.ts) adds opening, migrating
 * and the cluster surface; this class is the Store half, also used for fenced views: with
 * a `lease`, every write of that session checks it (the hot ones inside their single
 * statement, fenced-sql.ts; the rest in a transaction that share-locks the lease row first)
 * and fails with LEASE_LOST once another node has taken the session.
 */
export class PgStore extends PgAccessTables implements Store {
  constructor(db: Database, clock: Clock, lease?: Lease, ownsPool = true) {
    super(db, clock, lease, ownsPool);
  }

  async createSession(session: NewSession): Promise<SessionRow> {
    const { rows } = await this.write(`session ${session.id}`, undefined, (on) =>
      on.run<RawSession>("insertSession", [
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
        session.title ?? null,
        session.origin ?? "api",
        session.ephemeral ?? false,
        session.owner_key ?? null,
        session.forked_from ?? null,
      ]),
    );
    return sessionFromRaw(rows[0]!);
  }

  async getSession(id: string): Promise<SessionRow | undefined> {
    const { rows } = await this.direct("get session", id, (on) => on.run<RawSession>("getSession", [id]));
    return rows[0] && sessionFromRaw(rows[0]);
  }

  async listSessions(filter: SessionFilter = {}): Promise<SessionRow[]> {
    const values = [filter.parentSessionId ?? null, filter.status ?? null, filter.query ? filter.query.toLowerCase() : null, filter.order === "activity", limitOf(filter.limit)];
    const { rows } = await this.direct("list sessions", undefined, (on) =>
      filter.ownerKey === undefined ? on.run<RawSession>("listSessions", values) : on.run<RawSession>("listOwnedSessions", [...values, filter.ownerKey]),
    );
    return rows.map(sessionFromRaw);
  }

  /** Not fenced: a title is no run state, and any node may rename any session. */
  async setSessionTitle(id: string, title: string | null, options: { ifUnset?: boolean } = {}): Promise<SessionRow | undefined> {
    const { rows } = await this.write("set title", undefined, (on) => on.run<RawSession>("setTitle", [id, title, options.ifUnset === true]));
    if (rows[0]) return sessionFromRaw(rows[0]);
    if (!(await this.getSession(id))) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${id}`);
    return undefined;
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
    const lease = this.fenceOf(id);
    // Its own session's row checks the lease in the statement; another session's (a child's) in the write's transaction.
    const inline = lease?.sessionId === id;
    const fence = lease && inline ? updateSessionFence(values.push(lease.nodeId, lease.generation) - 1) : "";
    const text = `UPDATE sessions SET ${[...sets, "updated_at = $2"].join(", ")} WHERE id = $1${fence} RETURNING ${SESSION_COLUMNS}`;
    const update = (on: Queryable) => on.sql<RawSession>(text, values);
    const { rows } = inline || !lease ? await this.inline("update session", id, update) : await this.write("update session", id, update);
    if (!rows[0]) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${id}`);
    return sessionFromRaw(rows[0]);
  }

  async addTokenUsage(id: string, usage: TokenUsage, contextSize: number, costUsd = 0): Promise<void> {
    const cost = Number.isFinite(costUsd) ? costUsd : 0;
    const result = await this.inline("add token usage", id, (on) =>
      this.runFenced(on, "addTokenUsage", id, [id, ...USAGE_COLUMNS.map((column) => usage[column]), contextSize, this.nowIso(), cost]),
    );
    if (result.rowCount === 0) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${id}`);
  }

  async findChildByInstanceName(parentSessionId: string, instanceName: string): Promise<SessionRow | undefined> {
    const { rows } = await this.direct("find child", parentSessionId, (on) => on.run<RawSession>("findChild", [parentSessionId, instanceName]));
    return rows[0] && sessionFromRaw(rows[0]);
  }

  async appendMessage(message: NewMessage): Promise<MessageRow> {
    return this.inline(`message ${message.id}`, message.session_id, (on) => this.insertMessage(on, message));
  }

  async listMessages(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<MessageRow[]> {
    const { rows } = await this.direct("list messages", sessionId, (on) =>
      on.run<RawMessage>("listMessages", [sessionId, options.afterSeq ?? 0, limitOf(options.limit)]),
    );
    return rows.map(messageFromRaw);
  }

  async getMessage(id: string): Promise<MessageRow | undefined> {
    const { rows } = await this.direct("get message", undefined, (on) => on.run<RawMessage>("getMessage", [id]));
    return rows[0] && messageFromRaw(rows[0]);
  }

  async updateMessageMeta(sessionId: string, id: string, meta: Record<string, unknown>): Promise<void> {
    const result = await this.write("update message meta", sessionId, (on) => on.run("updateMessageMeta", [id, toJson(meta), sessionId]));
    if (result.rowCount === 0) throw new VeilError("NOT_FOUND", `Message not found: ${id}`);
  }

  async setCompacted(sessionId: string, messageIds: readonly string[]): Promise<void> {
    await this.write("set compacted", sessionId, (on) => on.run("setCompacted", [sessionId, messageIds]));
  }

  async appendAssistantStep(message: NewMessage, calls: readonly StoredToolCall[], spend?: StepSpend): Promise<MessageRow> {
    const cost = spend && Number.isFinite(spend.costUsd ?? 0) ? (spend.costUsd ?? 0) : 0;
    const spent = spend ? [...USAGE_COLUMNS.map((column) => spend.usage[column]), spend.contextSize, this.nowIso(), cost] : Array(9).fill(null);
    return this.inline(`message ${message.id}`, message.session_id, (on) =>
      this.insertMessage(on, message, "appendAssistantStep", [calls.map((c) => c.id), calls.map((c) => c.name), calls.map((c) => c.arguments), ...spent]),
    );
  }

  async recordToolResult(input: { sessionId: string; callId: string; state: ToolCallState; message: NewMessage }): Promise<MessageRow> {
    return this.inline(`message ${input.message.id}`, input.sessionId, (on) => this.insertMessage(on, input.message, "recordToolResult", [input.callId, input.state, this.nowIso()]));
  }

  async appendEvents(events: readonly NewStoredEvent[]): Promise<StoredEvent[]> {
    const lease = this.fenceOf(events.map((e) => e.session_id));
    return this.appendEventRows(events, lease ? [lease] : []);
  }

  /**
   * Appends one batch in one statement; with `leases`, each is checked inside it (a lost one
   * refuses the whole batch with LEASE_LOST naming its session, details.sessionId).
   */
  protected async appendEventRows(events: readonly NewStoredEvent[], leases: readonly Lease[]): Promise<StoredEvent[]> {
    if (events.length === 0) return [];
    const values: unknown[] = [
      events.map((e) => e.session_id),
      events.map((e) => e.seq),
      events.map((e) => e.type),
      events.map((e) => e.ts),
      events.map((e) => e.data),
    ];
    if (leases.length) values.push(leases.map((l) => l.sessionId), leases.map((l) => l.nodeId), leases.map((l) => l.generation));
    const name = leases.length ? "appendEventsFenced" : "appendEvents";
    const append = () => this.direct(`events of ${events[0]!.session_id}`, undefined, (on) => on.run<{ gseqs: number[] }>(name, values));
    // In call order per pool: a node publishes each batch once it resolves, so gseq must follow call order.
    const { rows } = await this.db.inOrder(append);
    // gseq = base + position, so ascending gseq is input order.
    const gseqs = rows[0]!.gseqs;
    return events.map((event, i) => ({ gseq: Number(gseqs[i]), ...event }));
  }


  async listEvents(sessionId: string, options: { after?: number; limit?: number } = {}): Promise<StoredEvent[]> {
    const { rows } = await this.direct("list events", sessionId, (on) =>
      on.run<StoredEvent>("listEvents", [sessionId, options.after ?? 0, limitOf(options.limit)]),
    );
    return rows;
  }

  async listEventsGlobal(options: { after?: number; limit?: number } = {}): Promise<StoredEvent[]> {
    const { rows } = await this.direct("list events", undefined, (on) => on.run<StoredEvent>("listEventsGlobal", [options.after ?? 0, limitOf(options.limit)]));
    return rows;
  }

  async lastEventSeq(sessionId: string): Promise<number> {
    const { rows } = await this.direct("last event seq", sessionId, (on) => on.run<{ n: number }>("lastEventSeq", [sessionId]));
    return rows[0]!.n;
  }

  async lastEventGseq(): Promise<number> {
    const { rows } = await this.direct("last event gseq", undefined, (on) => on.run<{ n: number }>("lastEventGseq", []));
    return rows[0]!.n;
  }

  async upsertToolCall(call: Omit<ToolCallRow, "output" | "started_at" | "ended_at"> & Partial<ToolCallRow>): Promise<void> {
    await this.write(`tool call ${call.id}`, call.session_id, (on) =>
      on.run("upsertToolCall", [
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
    const result = await this.inline("set tool call state", sessionId, (on) =>
      this.runFenced(on, "setToolCallState", sessionId, [id, sessionId, state, output !== undefined, output ?? null, this.nowIso()]),
    );
    if (result.rowCount === 0) throw new VeilError("NOT_FOUND", `Tool call not found: ${id} in session ${sessionId}`);
  }

  async listToolCalls(sessionId: string, options: { states?: ToolCallState[] } = {}): Promise<ToolCallRow[]> {
    const { rows } = await this.direct("list tool calls", sessionId, (on) => on.run<ToolCallRow>("listToolCalls", [sessionId, options.states ?? null]));
    return rows;
  }

  async addInbox(item: InboxItem): Promise<void> {
    // Through a fenced view (a run queueing its own next input) the lease is checked; the plain store takes anyone's message.
    await this.write(`inbox item ${item.id}`, item.session_id, (on) =>
      on.run("addInbox", [item.id, item.session_id, item.content, toJson(item.meta), item.created_at]),
    );
  }

  async listInbox(sessionId: string): Promise<InboxItem[]> {
    const { rows } = await this.direct("list inbox", sessionId, (on) => on.run<RawInbox>("listInbox", [sessionId]));
    return rows.map(inboxFromRaw);
  }

  async deliverInbox(sessionId: string, deliveries: { inboxId: string; message: NewMessage }[]): Promise<MessageRow[]> {
    return this.write("deliver inbox", sessionId, (on) =>
      on.transaction(async (tx) => {
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
    const { rows } = await this.direct("sessions with inbox", undefined, (on) => on.run<{ session_id: string }>("sessionsWithInbox", []));
    return rows.map((r) => r.session_id);
  }

  /**
   * Inserts one message on `on` (the pool, or a transaction) and returns the full row;
   * `statement` may be a fused form that writes its tool-call rows too (`extra` values).
   */
  protected async insertMessage(on: Queryable, message: NewMessage, statement: FenceableStatement = "insertMessage", extra: unknown[] = []): Promise<MessageRow> {
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
    const { rows } = await this.runFenced<{ seq: number }>(on, statement, row.session_id, [
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
      ...extra,
    ]);
    if (!rows[0]) throw new VeilError("SESSION_NOT_FOUND", `Session not found: ${message.session_id} (message ${message.id})`);
    return { ...row, seq: rows[0].seq };
  }

}

/** LIMIT NULL is no limit. */
function limitOf(limit: number | undefined): number | null {
  return limit === undefined ? null : Math.max(0, Math.floor(limit));
}
