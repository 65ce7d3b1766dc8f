import type pg from "pg";
import type { Clock } from "../../base/clock.js";
import { VeilError } from "../../errors.js";
import type { AuditRow, TodoItem, WakeupRow } from "../store.js";
import type { Lease } from "../cluster.js";
import type { Database, Queryable } from "./database.js";
import type { FenceableStatement } from "./fenced-sql.js";
import { auditFromRaw, wakeupFromRaw, type RawAudit, type RawWakeup } from "../rows.js";

/**
 * The pool under PgStore, how its writes are fenced (see PgStore), and the session's side
 * tables, which no run step writes with its rows: read markers, todos, the wake-up, session
 * meta and the audit trail.
 */
export abstract class PgSideTables {
  protected readonly db: Database;
  protected readonly clock: Clock;
  private readonly lease: Lease | undefined;
  private readonly ownsPool: boolean;
  private closed = false;

  protected constructor(db: Database, clock: Clock, lease?: Lease, ownsPool = true) {
    this.db = db;
    this.clock = clock;
    this.lease = lease;
    this.ownsPool = ownsPool;
  }

  /** The database URL with the password hidden (for logs and /health). */
  get url(): string {
    return this.db.safeUrl;
  }

  async markRead(sessionId: string, path: string): Promise<void> {
    await this.write("mark read", sessionId, (on) => on.run("markRead", [sessionId, path, this.nowIso()]));
  }

  async hasRead(sessionId: string, path: string): Promise<boolean> {
    const result = await this.direct("has read", sessionId, (on) => on.run("hasRead", [sessionId, path]));
    return result.rowCount !== 0;
  }

  async clearReadMarkers(sessionId: string): Promise<void> {
    await this.write("clear read markers", sessionId, (on) => on.run("clearReadMarkers", [sessionId]));
  }

  async setTodos(sessionId: string, todos: TodoItem[]): Promise<void> {
    await this.write("set todos", sessionId, (on) =>
      on.transaction(async (tx) => {
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
    const { rows } = await this.direct("get todos", sessionId, (on) => on.run<TodoItem>("getTodos", [sessionId]));
    return rows;
  }

  async setWakeup(row: WakeupRow): Promise<void> {
    await this.write("set wake-up", row.session_id, (on) =>
      on.run("setWakeup", [row.session_id, row.time, row.interval_ms, row.message, row.loop, row.next_fire_at, row.created_at]),
    );
  }

  async getWakeup(sessionId: string): Promise<WakeupRow | undefined> {
    const { rows } = await this.direct("get wake-up", sessionId, (on) => on.run<RawWakeup>("getWakeup", [sessionId]));
    return rows[0] && wakeupFromRaw(rows[0]);
  }

  async deleteWakeup(sessionId: string): Promise<void> {
    await this.write("delete wake-up", sessionId, (on) => on.run("deleteWakeup", [sessionId]));
  }

  async listWakeups(): Promise<WakeupRow[]> {
    const { rows } = await this.direct("list wake-ups", undefined, (on) => on.run<RawWakeup>("listWakeups", []));
    return rows.map(wakeupFromRaw);
  }

  /** Any JSON value; `undefined` deletes the key (JSON has no undefined). */
  async setSessionMeta(sessionId: string, key: string, value: unknown): Promise<void> {
    await this.write("set session meta", sessionId, (on) =>
      value === undefined
        ? on.run("deleteMeta", [sessionId, key])
        : on.run("setMeta", [sessionId, key, JSON.stringify(value), this.nowIso()]),
    );
  }

  async getSessionMeta<T = unknown>(sessionId: string, key: string): Promise<T | undefined> {
    const { rows } = await this.direct("get session meta", sessionId, (on) => on.run<{ value: string }>("getMeta", [sessionId, key]));
    return rows[0] === undefined ? undefined : (JSON.parse(rows[0].value) as T);
  }

  async addAudit(row: Omit<AuditRow, "id" | "created_at">): Promise<void> {
    const values = [row.session_id, row.kind, JSON.stringify(row.data ?? {}), this.nowIso()];
    if (row.session_id === null) {
      await this.direct("add audit", undefined, (on) => on.run("addAudit", values));
      return;
    }
    const sessionId = row.session_id;
    await this.inline("add audit", sessionId, (on) => this.runFenced(on, "addAudit", sessionId, values));
  }

  async listAudit(filter: { sessionId?: string; kind?: string } = {}): Promise<AuditRow[]> {
    const { rows } = await this.direct("list audit", filter.sessionId, (on) => on.run<RawAudit>("listAudit", [filter.sessionId ?? null, filter.kind ?? null]));
    return rows.map(auditFromRaw);
  }

  /** Ends the pool; a fenced view only stops itself (the pool belongs to its parent). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsPool) await this.db.end();
  }

  /**
   * Runs a statement of fenced-sql.ts: in its fenced form when `sessionId` is this view's;
   * another session's row (a run writing its child's) after the view's lease is checked.
   */
  protected runFenced<R extends pg.QueryResultRow = pg.QueryResultRow>(on: Queryable, name: FenceableStatement, sessionId: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    const lease = this.fenceOf(sessionId);
    if (!lease) return on.run<R>(name, values);
    if (lease.sessionId === sessionId) return on.run<R>(`${name}Fenced`, [...values, lease.nodeId, lease.generation]);
    return on.transaction(async (tx) => {
      await checkLease(tx, lease, name);
      return tx.run<R>(name, values);
    });
  }

  /**
   * The view's lease when a write touches a session: every session write through a fenced
   * view checks it, its own session's and any other's (a run that lost its session writes
   * nothing, not even its child's budget).
   */
  protected fenceOf(sessions: string | readonly string[] | undefined): Lease | undefined {
    if (!this.lease || sessions === undefined || sessions.length === 0) return undefined;
    return this.lease;
  }

  /** Runs one statement (or transaction) directly on the pool, never fenced: refuses after close, maps driver errors to catalogue errors. */
  protected async direct<T>(what: string, sessionId: string | undefined, body: (on: Queryable) => Promise<T>): Promise<T> {
    if (this.closed) throw new VeilError("INTERNAL_ERROR", "The store is closed");
    try {
      return await body(this.db);
    } catch (error) {
      throw this.db.fail(error, what, sessionId);
    }
  }

  /** A write that checks a fence itself, inside its statement (runFenced). */
  protected inline<T>(what: string, sessionId: string, body: (on: Queryable) => Promise<T>): Promise<T> {
    return this.direct(what, sessionId, body);
  }

  /**
   * A write of `sessions`' data; on a fenced view that touches its session, it runs in a
   * transaction that first share-locks the lease row (a takeover waits for its commit).
   */
  protected async write<T>(what: string, sessions: string | readonly string[] | undefined, body: (on: Queryable) => Promise<T>): Promise<T> {
    const lease = this.fenceOf(sessions);
    if (!lease) return this.direct(what, typeof sessions === "string" ? sessions : undefined, body);
    return this.direct(what, lease.sessionId, (db) =>
      db.transaction(async (tx) => {
        await checkLease(tx, lease, what);
        return body(tx);
      }),
    );
  }

  protected nowIso(): string {
    return new Date(this.clock.now()).toISOString();
  }
}

/** Share-locks the lease row until the transaction commits (a takeover waits for it); LEASE_LOST when the lease is gone. */
async function checkLease(tx: Queryable, lease: Lease, what: string): Promise<void> {
  const held = await tx.run("checkFence", [lease.sessionId, lease.nodeId, lease.generation]);
  if (held.rowCount === 0) {
    throw new VeilError("LEASE_LOST", `Session ${lease.sessionId} is no longer held by node ${lease.nodeId} (generation ${lease.generation}); the write (${what}) was refused`, {
      details: { sessionId: lease.sessionId },
    });
  }
}
