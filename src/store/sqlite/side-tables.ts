import type Database from "better-sqlite3";
import type { Clock } from "../../base/clock.js";
import { VeilError } from "../../errors.js";
import type { AuditRow, TodoItem, WakeupRow } from "../store.js";
import { auditFromRaw, wakeupFromRaw, type RawAudit, type RawWakeup } from "../rows.js";
import { prepareStatements, type Statements } from "./statements.js";

/**
 * The connection under SqliteStore and the session's side tables, which no run step writes
 * with its rows: read markers, todos, the wake-up, session meta and the audit trail.
 */
export abstract class SqliteSideTables {
  protected readonly db: Database.Database;
  protected readonly stmts: Statements;
  protected readonly clock: Clock;
  private readonly setTodosTx: (sessionId: string, todos: TodoItem[]) => void;
  private closed = false;

  protected constructor(db: Database.Database, clock: Clock) {
    this.db = db;
    this.clock = clock;
    this.stmts = prepareStatements(db);
    const setTodos = db.transaction((sessionId: string, todos: TodoItem[]) => {
      this.stmts.deleteTodos.run(sessionId);
      todos.forEach((todo, position) =>
        this.stmts.insertTodo.run({
          session_id: sessionId,
          position,
          id: todo.id,
          content: todo.content,
          status: todo.status,
          priority: todo.priority,
        }),
      );
    });
    this.setTodosTx = (sessionId, todos) => setTodos.immediate(sessionId, todos);
  }

  async markRead(sessionId: string, path: string): Promise<void> {
    this.assertOpen();
    this.stmts.markRead.run(sessionId, path, this.nowIso());
  }

  async hasRead(sessionId: string, path: string): Promise<boolean> {
    this.assertOpen();
    return this.stmts.hasRead.get(sessionId, path) !== undefined;
  }

  async clearReadMarkers(sessionId: string): Promise<void> {
    this.assertOpen();
    this.stmts.clearReadMarkers.run(sessionId);
  }

  async setTodos(sessionId: string, todos: TodoItem[]): Promise<void> {
    this.assertOpen();
    this.setTodosTx(sessionId, todos);
  }

  async getTodos(sessionId: string): Promise<TodoItem[]> {
    this.assertOpen();
    return this.stmts.getTodos.all(sessionId) as TodoItem[];
  }

  async setWakeup(row: WakeupRow): Promise<void> {
    this.assertOpen();
    this.stmts.setWakeup.run({ ...row, loop: row.loop ? 1 : 0 });
  }

  async getWakeup(sessionId: string): Promise<WakeupRow | undefined> {
    this.assertOpen();
    const raw = this.stmts.getWakeup.get(sessionId) as RawWakeup | undefined;
    return raw && wakeupFromRaw(raw);
  }

  async deleteWakeup(sessionId: string): Promise<void> {
    this.assertOpen();
    this.stmts.deleteWakeup.run(sessionId);
  }

  async listWakeups(): Promise<WakeupRow[]> {
    this.assertOpen();
    return (this.stmts.listWakeups.all() as RawWakeup[]).map(wakeupFromRaw);
  }

  /** Any JSON value; `undefined` deletes the key (JSON has no undefined). */
  async setSessionMeta(sessionId: string, key: string, value: unknown): Promise<void> {
    this.assertOpen();
    if (value === undefined) this.stmts.deleteMeta.run(sessionId, key);
    else this.stmts.setMeta.run(sessionId, key, JSON.stringify(value), this.nowIso());
  }

  async getSessionMeta<T = unknown>(sessionId: string, key: string): Promise<T | undefined> {
    this.assertOpen();
    const row = this.stmts.getMeta.get(sessionId, key) as { value: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.value) as T);
  }

  async addAudit(row: Omit<AuditRow, "id" | "created_at">): Promise<void> {
    this.assertOpen();
    this.stmts.addAudit.run(row.session_id, row.kind, JSON.stringify(row.data ?? {}), this.nowIso());
  }

  async listAudit(filter: { sessionId?: string; kind?: string } = {}): Promise<AuditRow[]> {
    this.assertOpen();
    const rows = this.stmts.listAudit.all({
      session_id: filter.sessionId ?? null,
      kind: filter.kind ?? null,
    }) as RawAudit[];
    return rows.map(auditFromRaw);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  protected nowIso(): string {
    return new Date(this.clock.now()).toISOString();
  }

  protected assertOpen(): void {
    if (this.closed) throw new VeilError("INTERNAL_ERROR", "The store is closed");
  }
}
