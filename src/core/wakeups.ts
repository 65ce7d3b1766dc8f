import { VeilError } from "../errors.js";
import type { Store, WakeupRow } from "../store/store.js";
import type { Disposable, Logger, WakeupRowWrites } from "../tools/types.js";
import type { Clock } from "../base/clock.js";
import { formatDuration, parseWakeupTime } from "./wakeups/duration.js";

export { MAX_WAKEUP_MS, formatDuration, parseWakeupTime } from "./wakeups/duration.js";

/** The public shape of a schedule (GET /sessions/:id/wakeup, the tool's details). */
export interface WakeupInfo {
  /** As the caller gave it ("30m", "90s", "2h", "5"). */
  time: string;
  message: string;
  loop: boolean;
  /** ISO time of the next firing (in the past while a suspended session waits to be resumed). */
  nextFireAt: string;
  intervalMs: number;
}

export interface ArmWakeupInput {
  time: string | number;
  message?: string;
  loop?: boolean;
}

export interface WakeupServiceDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  /** Shortest looping interval in seconds (settings.wakeup.minLoopSeconds), read at each arm. */
  minLoopSeconds(): number;
  /** Puts `message` into the session as a new user turn (SessionManager.send). */
  deliver(sessionId: string, message: string): Promise<void>;
  /**
   * Several nodes (core/cluster): true for exactly one node per (session, due time); the
   * others skip that firing. Absent on a single node.
   */
  claim?(sessionId: string, dueAt: number): Promise<boolean>;
  /** Delay before a schedule found overdue at start fires. default: 500 ms */
  startupDelayMs?: number;
}

/** Key under which the runtime keeps the service (runtime.services and runtime.resources). */
export const WAKEUPS_SERVICE = "wakeups";

const DEFAULT_STARTUP_DELAY_MS = 500;

/**
 * Per-session self wake-ups (`schedule_wakeup`). One schedule per
 * session, stored in the store's wakeups table so a restart keeps it.
 *
 * Timing rules:
 * - Timers are armed on the clock with the time left until `next_fire_at` (wall
 *   time); when one fires, the stored row is re-read and delivered only if it is
 *   really due by the wall clock, so a clock that jumps back waits the rest and
 *   a timer that fires twice for the same due time delivers once.
 * - The row is claimed (deleted, or advanced for a loop) before delivery; a loop's
 *   next time is computed from the due time, skipping missed periods.
 * - A suspended session keeps its schedule: the due row stays in the store and is
 *   delivered once when the session resumes (one message, not one per missed period).
 * - A closed session's schedule is dropped.
 * - At start every stored schedule is re-armed; an overdue one fires once, shortly after.
 */
export class WakeupService implements Disposable {
  private readonly timers = new Map<string, { due: number; cancel: () => void }>();
  private readonly chains = new Map<string, Promise<void>>();
  /** `${created_at}|${next_fire_at}` of the last delivery per session: the same due time never goes out twice. */
  private readonly delivered = new Map<string, string>();
  private disposed = false;

  constructor(private readonly deps: WakeupServiceDeps) {}

  /**
   * Arms (or with time "0" cancels) the session's schedule; replaces any previous one. The
   * row is written through `rows` when given (a run's, fenced on a cluster), else the store.
   */
  async arm(sessionId: string, input: ArmWakeupInput, rows: WakeupRowWrites = this.rowsOf(sessionId)): Promise<WakeupInfo | null> {
    const session = await this.deps.store.getSession(sessionId);
    if (!session) throw new VeilError("SESSION_NOT_FOUND", `no session "${sessionId}"`);
    if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${sessionId}" is closed`);
    const ms = parseWakeupTime(input.time);
    if (ms === 0) {
      await this.cancel(sessionId, rows);
      return null;
    }
    const message = input.message ?? "";
    if (message.trim() === "") throw new VeilError("VALIDATION_ERROR", "message is required when time > 0: it is the text delivered to the session when the timer fires");
    const loop = input.loop === true;
    const minLoopMs = Math.max(0, this.deps.minLoopSeconds()) * 1000;
    if (loop && ms < minLoopMs) {
      throw new VeilError("VALIDATION_ERROR", `a looping wake-up must be at least ${formatDuration(minLoopMs)} apart (settings.wakeup.minLoopSeconds); got ${formatDuration(ms)}`);
    }
    const now = this.deps.clock.now();
    const row: WakeupRow = {
      session_id: sessionId,
      time: String(input.time).trim(),
      interval_ms: ms,
      message,
      loop,
      next_fire_at: now + ms,
      created_at: new Date(now).toISOString(),
    };
    await this.exclusive(sessionId, async () => {
      const fresh = await this.deps.store.getSession(sessionId);
      if (!fresh || fresh.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${sessionId}" is closed`);
      await rows.set(row);
      this.schedule(row);
    });
    return toInfo(row);
  }

  /** Removes the session's schedule; true when there was one. */
  async cancel(sessionId: string, rows: WakeupRowWrites = this.rowsOf(sessionId)): Promise<boolean> {
    return this.exclusive(sessionId, async () => {
      this.clearTimer(sessionId);
      const existing = await this.deps.store.getWakeup(sessionId);
      if (!existing) return false;
      await rows.delete();
      return true;
    });
  }

  /** The session's row written straight to the store (outside any run: the HTTP route, the service's own firing). */
  private rowsOf(sessionId: string): WakeupRowWrites {
    return { set: (row) => this.deps.store.setWakeup(row), delete: () => this.deps.store.deleteWakeup(sessionId) };
  }

  async get(sessionId: string): Promise<WakeupInfo | null> {
    const row = await this.deps.store.getWakeup(sessionId);
    return row ? toInfo(row) : null;
  }

  /** Re-arms every stored schedule (runtime start); drops those of closed or missing sessions. */
  async start(): Promise<void> {
    const now = this.deps.clock.now();
    for (const row of await this.deps.store.listWakeups()) {
      const session = await this.deps.store.getSession(row.session_id);
      if (!session || session.status === "closed") {
        await this.deps.store.deleteWakeup(row.session_id);
        continue;
      }
      const overdue = row.next_fire_at <= now;
      this.schedule(row, overdue ? (this.deps.startupDelayMs ?? DEFAULT_STARTUP_DELAY_MS) : 0);
      this.deps.log.debug("wake-up re-armed at start", { sessionId: row.session_id, dueAt: row.next_fire_at });
    }
  }

  /**
   * Cluster: this node took the session over from a dead node, which may have armed a
   * schedule this node never saw; it is armed here now (an overdue one fires once, shortly).
   */
  async adopt(sessionId: string): Promise<void> {
    await this.exclusive(sessionId, async () => {
      const row = await this.deps.store.getWakeup(sessionId);
      if (!row) return;
      const overdue = row.next_fire_at <= this.deps.clock.now();
      this.schedule(row, overdue ? (this.deps.startupDelayMs ?? DEFAULT_STARTUP_DELAY_MS) : 0);
    });
  }

  /** Session resumed: a schedule that came due while suspended is delivered now, once. */
  async resumed(sessionId: string): Promise<void> {
    await this.exclusive(sessionId, async () => {
      const row = await this.deps.store.getWakeup(sessionId);
      if (row) await this.fireNow(sessionId, row);
    });
  }

  /** Session closed: its schedule is dropped and a loop stops. */
  async closed(sessionId: string): Promise<void> {
    await this.exclusive(sessionId, async () => {
      this.clearTimer(sessionId);
      this.delivered.delete(sessionId);
      await this.deps.store.deleteWakeup(sessionId);
    });
  }

  /** Number of armed timers (diagnostics). */
  armedCount(): number {
    return this.timers.size;
  }

  /** Settles when no firing, arming or cancel is in flight. */
  async idle(): Promise<void> {
    while (this.chains.size > 0) await Promise.allSettled([...this.chains.values()]);
  }

  dispose(): void {
    this.disposed = true;
    for (const timer of this.timers.values()) timer.cancel();
    this.timers.clear();
  }

  private schedule(row: WakeupRow, minDelayMs = 0): void {
    if (this.disposed) return;
    this.clearTimer(row.session_id);
    const due = row.next_fire_at;
    const delay = Math.max(minDelayMs, due - this.deps.clock.now());
    const cancel = this.deps.clock.setTimer(delay, () => this.onTimer(row.session_id, due));
    this.timers.set(row.session_id, { due, cancel });
  }

  private clearTimer(sessionId: string): void {
    this.timers.get(sessionId)?.cancel();
    this.timers.delete(sessionId);
  }

  private onTimer(sessionId: string, due: number): void {
    const current = this.timers.get(sessionId);
    if (current?.due === due) this.timers.delete(sessionId);
    void this.exclusive(sessionId, async () => {
      if (this.disposed) return;
      const row = await this.deps.store.getWakeup(sessionId);
      // Gone (delivered by another node, or cancelled), or replaced by a newer schedule (which has its own timer).
      if (!row || row.next_fire_at !== due) return this.deps.log.debug("wake-up timer found no due schedule", { sessionId, dueAt: due });
      await this.fireNow(sessionId, row);
    }).catch((error) => this.deps.log.warn("wake-up could not fire", { sessionId, error: String(error) }));
  }

  /** Delivers `row` if it is due by the wall clock; runs inside the session's exclusive chain. */
  private async fireNow(sessionId: string, row: WakeupRow): Promise<void> {
    if (this.disposed) return;
    const { store, clock } = this.deps;
    const now = clock.now();
    if (row.next_fire_at > now) {
      // The wall clock is behind the timer (it moved back): wait the rest.
      if (this.timers.get(sessionId)?.due !== row.next_fire_at) this.schedule(row);
      return;
    }
    const key = `${row.created_at}|${row.next_fire_at}`;
    if (this.delivered.get(sessionId) === key) return;
    const session = await store.getSession(sessionId);
    if (!session || session.status === "closed") {
      this.clearTimer(sessionId);
      await store.deleteWakeup(sessionId);
      return;
    }
    if (session.status === "suspended") return; // stays due; resumed() delivers it once
    // Claim before delivering, so the same due time cannot go out twice.
    this.delivered.set(sessionId, key);
    if (this.deps.claim && !(await this.deps.claim(sessionId, row.next_fire_at))) {
      // Another node delivers this one; a loop's next period is armed here too.
      this.deps.log.debug("wake-up delivered by another node", { sessionId, dueAt: row.next_fire_at });
      if (row.loop) this.schedule({ ...row, next_fire_at: nextLoopTime(row.next_fire_at, row.interval_ms, now) });
      else this.clearTimer(sessionId);
      return;
    }
    if (row.loop) {
      const next: WakeupRow = { ...row, next_fire_at: nextLoopTime(row.next_fire_at, row.interval_ms, now) };
      await store.setWakeup(next);
      this.schedule(next);
    } else {
      this.clearTimer(sessionId);
      await store.deleteWakeup(sessionId);
    }
    try {
      await this.deps.deliver(sessionId, row.message);
    } catch (error) {
      const code = error instanceof VeilError ? error.code : undefined;
      if (code === "SESSION_SUSPENDED" || code === "CANCELLED") {
        // Suspended between the check and the send (resume delivers it), or the runtime is
        // shutting down (the next start delivers it): put the due row back.
        this.delivered.delete(sessionId);
        this.clearTimer(sessionId);
        await store.setWakeup(row);
      } else if (code === "SESSION_CLOSED" || code === "SESSION_NOT_FOUND") {
        this.clearTimer(sessionId);
        await store.deleteWakeup(sessionId);
      } else {
        this.deps.log.warn("wake-up message could not be delivered", { sessionId, error: String(error) });
      }
    }
  }

  /** Runs `fn` after every earlier operation on the same session settled. */
  private exclusive<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(sessionId) ?? Promise.resolve();
    const run = previous.then(fn);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(sessionId, settled);
    void settled.then(() => {
      if (this.chains.get(sessionId) === settled) this.chains.delete(sessionId);
    });
    return run;
  }
}

/** The first time after `now` on the grid `due + k·interval` (missed periods are skipped). */
export function nextLoopTime(due: number, intervalMs: number, now: number): number {
  if (intervalMs <= 0) return now + 1;
  const k = Math.floor((now - due) / intervalMs) + 1;
  return due + Math.max(1, k) * intervalMs;
}

export function toInfo(row: WakeupRow): WakeupInfo {
  return {
    time: row.time,
    message: row.message,
    loop: row.loop,
    nextFireAt: new Date(row.next_fire_at).toISOString(),
    intervalMs: row.interval_ms,
  };
}

export function isWakeupService(value: unknown): value is WakeupService {
  return value instanceof WakeupService;
}
