import type { EventSink, VeilEvent, VeilEventBody } from "../base/events.js";
import type { IdGenerator } from "../base/ids.js";
import type { MessageRow, NewMessage, SessionRow, SessionStatus, Store, TodoItem } from "../store/store.js";
import { preview } from "../tools/format.js";
import type { ToolWrites } from "../tools/types.js";
import type { TokenUsage } from "../base/usage.js";
import type { ContextWriter } from "./compaction/session-context.js";
import { eventInput } from "./event-input.js";
import { unansweredCalls } from "./history.js";
import { cancelledText } from "./tool-calls.js";

/** The session state an engine saved between turns (e.g. the Claude SDK's conversation id). */
export const ENGINE_STATE_KEY = "engineState";

export interface SessionWriterDeps {
  sessionId: string;
  /** A run's fenced store while it runs (cluster), else the plain store. */
  store: Store;
  events: EventSink;
  ids: IdGenerator;
  now(): number;
}

/**
 * Every write of one session with the events it owes, through one store. A run writes
 * through the writer its recorder holds, over the run's fenced store (on a cluster, each
 * write checks the lease the run started under, so a node that lost the session writes
 * nothing more of it); the writes outside any run (control actions, recovery after a
 * crash, the SessionStart hook) use a writer over the plain store.
 */
export class SessionWriter {
  constructor(readonly deps: SessionWriterDeps) {}

  get store(): Store {
    return this.deps.store;
  }

  get sessionId(): string {
    return this.deps.sessionId;
  }

  publish(body: VeilEventBody): Promise<VeilEvent> {
    return this.deps.events.publish(this.deps.sessionId, body);
  }

  setMessageMeta(id: string, meta: Record<string, unknown>): Promise<void> {
    return this.deps.store.updateMessageMeta(this.deps.sessionId, id, meta);
  }

  /** The status row and its session.state event. */
  async setStatus(status: SessionStatus, reason: string): Promise<SessionRow> {
    const row = await this.deps.store.updateSession(this.deps.sessionId, { status });
    await this.publish({ type: "session.state", status, reason });
    return row;
  }

  /**
   * The title someone chose (null clears it), with its session.titled event. Naming is not
   * activity (updated_at stays), and a session someone names is kept (no longer ephemeral).
   */
  async setTitle(title: string | null): Promise<SessionRow> {
    const row = (await this.deps.store.setSessionTitle(this.deps.sessionId, title))!;
    await this.publish({ type: "session.titled", title: row.title });
    return row;
  }

  /**
   * A title made from the first message, only while the session has none (one given on create,
   * or a racing first message, wins). No event: the turn the message starts announces itself.
   */
  async titleIfUnset(title: string): Promise<void> {
    await this.deps.store.setSessionTitle(this.deps.sessionId, title, { ifUnset: true });
  }

  /** Someone came back to a one-shot session: it is no longer closed once idle. */
  keep(): Promise<SessionRow> {
    return this.deps.store.updateSession(this.deps.sessionId, { ephemeral: false });
  }

  /**
   * After a crash or a cut run: every assistant tool_call gets exactly one result (a
   * CANCELLED placeholder where the tool never finished), so the next provider request is
   * valid; calls left in a non-terminal state are closed too. Each placeholder is published
   * like any result (tool.end, chat.message). Returns how many placeholders it wrote.
   */
  async closeDanglingCalls(): Promise<number> {
    const { store, sessionId, ids } = this.deps;
    const rows = await store.listMessages(sessionId);
    const open = new Map((await store.listToolCalls(sessionId, { states: ["pending", "validating", "executing"] })).map((c) => [c.id, c]));
    let written = 0;
    for (const call of unansweredCalls(rows)) {
      const message: NewMessage = { id: ids.next("msg"), session_id: sessionId, role: "tool", content: cancelledText(), tool_call_id: call.id, meta: { toolName: call.name, placeholder: true } };
      const row = open.delete(call.id) ? await store.recordToolResult({ sessionId, callId: call.id, state: "cancelled", message }) : await store.appendMessage(message);
      this.publishToolResult(row, { name: call.name, id: call.id, input: null, success: false, durationMs: 0, details: null });
      written++;
    }
    for (const call of open.values()) await store.setToolCallState(call.id, sessionId, "cancelled", cancelledText());
    return written;
  }

  /** tool.end and chat.message of a stored tool result row. */
  publishToolResult(row: MessageRow, call: { name: string; id: string; input: unknown; success: boolean; durationMs: number; details: unknown }): void {
    const output = row.content ?? "";
    void this.publish({
      type: "tool.end",
      toolName: call.name,
      toolCallId: call.id,
      toolInput: eventInput(call.input),
      output,
      outputPreview: preview(output),
      success: call.success,
      durationMs: call.durationMs,
      details: call.details ?? null,
    });
    void this.publish({ type: "chat.message", role: "tool", id: row.id, session_id: row.session_id, content: row.content, tool_call_id: call.id, created_at: row.created_at });
  }

  /** A user row the runtime adds to the history itself (a hook's context), with its chat.message. */
  async appendUserRow(content: string, meta: Record<string, unknown>): Promise<MessageRow> {
    const row = await this.deps.store.appendMessage({ id: this.deps.ids.next("msg"), session_id: this.deps.sessionId, role: "user", content, meta });
    await this.publish({ type: "chat.message", role: "user", id: row.id, session_id: row.session_id, content: row.content, created_at: row.created_at });
    return row;
  }

  /** A message for the session's next boundary (a Stop hook's continuation). */
  async queueInput(content: string, meta: Record<string, unknown>): Promise<void> {
    await this.deps.store.addInbox({ id: this.deps.ids.next("msg"), session_id: this.deps.sessionId, content, meta, created_at: new Date(this.deps.now()).toISOString() });
  }

  saveEngineState(state: Record<string, unknown> | null): Promise<void> {
    return this.deps.store.setSessionMeta(this.deps.sessionId, ENGINE_STATE_KEY, state);
  }

  /** Where a compaction outside any run (an idle session's manual one) writes; `price` prices the summarizer's call. */
  contextWriter(price: (usage: TokenUsage, model: string) => number | null): ContextWriter {
    const { store, sessionId } = this.deps;
    return {
      store,
      publish: (body) => this.publish(body),
      spend: async (usage, model, contextSize) => store.addTokenUsage(sessionId, usage, contextSize, price(usage, model) ?? 0),
      // An engine that keeps its own conversation starts again from the compacted history.
      compacted: () => this.saveEngineState(null),
    };
  }

  /** What one tool call may write of its session: its side tables and its events, nothing else. */
  toolWrites(call: { id: string; name: string }): ToolWrites {
    const shared = (this.sessionWrites ??= this.makeSessionWrites());
    return {
      todos: shared.todos,
      readMarkers: shared.readMarkers,
      otherSessions: shared.otherSessions,
      wakeupRow: shared.wakeupRow,
      audit: shared.audit,
      emitChunk: (chunk) => void this.publish({ type: "tool.chunk", toolName: call.name, toolCallId: call.id, chunk }),
      emit: async (body) => void (await this.publish(body)),
    };
  }

  /** The part of every call's writes that names no call: made once per writer, not per call. */
  private sessionWrites?: Omit<ToolWrites, "emitChunk" | "emit">;

  private makeSessionWrites(): Omit<ToolWrites, "emitChunk" | "emit"> {
    const { store, sessionId } = this.deps;
    return {
      todos: { get: () => store.getTodos(sessionId), set: (todos: TodoItem[]) => store.setTodos(sessionId, todos) },
      readMarkers: { mark: (path) => store.markRead(sessionId, path), has: (path) => store.hasRead(sessionId, path) },
      otherSessions: {
        update: (id, patch) => store.updateSession(id, patch),
        setMeta: (id, key, value) => store.setSessionMeta(id, key, value),
        audit: (id, kind, data) => store.addAudit({ session_id: id, kind, data }),
      },
      wakeupRow: { set: (row) => store.setWakeup({ ...row, session_id: sessionId }), delete: () => store.deleteWakeup(sessionId) },
      audit: (kind, data) => store.addAudit({ session_id: sessionId, kind, data }),
    };
  }
}
