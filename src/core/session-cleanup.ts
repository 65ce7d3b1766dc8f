import type { Clock } from "../base/clock.js";
import { parseDuration } from "../base/duration.js";
import type { Logger } from "../base/log.js";
import type { Settings } from "../config/types.js";
import { isVeilError } from "../errors.js";
import type { SessionRow, SessionStatus, Store } from "../store/store.js";
import type { SessionManager } from "./session-manager.js";

/** Most sessions one request or command may close at once. */
export const MAX_CLOSE_IDS = 1000;

export interface CloseOutcome {
  /** Every session named that is closed now (those closed already included), in the order named. */
  closed: SessionRow[];
  /** Ids that name no session. */
  notFound: string[];
  /** Running in another process (a `veil serve`): left alone, to be closed there. */
  busy: SessionRow[];
}

/**
 * Closes the sessions named, each once, in order: its run cancelled, its shells killed, its
 * timer dropped, its sub-agents closed. An unknown id is reported, not an error. With
 * `runningElsewhere` (a CLI process, which holds no session's run), a running session is left
 * to the process that runs it.
 */
export async function closeSessions(sessions: SessionManager, ids: readonly string[], options: { runningElsewhere?: boolean } = {}): Promise<CloseOutcome> {
  const outcome: CloseOutcome = { closed: [], notFound: [], busy: [] };
  for (const id of new Set(ids)) {
    try {
      const row = await sessions.get(id);
      if (options.runningElsewhere && row.status === "running" && !sessions.isRunning(id)) outcome.busy.push(row);
      else outcome.closed.push(await sessions.close(id));
    } catch (error) {
      if (isVeilError(error) && error.code === "SESSION_NOT_FOUND") outcome.notFound.push(id);
      else throw error;
    }
  }
  return outcome;
}

/** The open top-level sessions with no activity for `idleMs` (running ones are never idle), least recently active first. */
export async function idleSessions(store: Store, now: number, idleMs: number, options: { ephemeralOnly?: boolean; statuses?: readonly SessionStatus[] } = {}): Promise<SessionRow[]> {
  const before = new Date(now - idleMs).toISOString();
  const statuses = options.statuses ?? ["idle", "suspended"];
  const rows = await store.listSessions({ order: "activity" });
  return rows
    .filter((row) => row.parent_session_id === null && statuses.includes(row.status) && row.updated_at < before && (!options.ephemeralOnly || row.ephemeral))
    .reverse();
}

/** limits.idleSessionTtl in milliseconds, or null when one-shot sessions are never closed for idling. */
export function idleSessionTtlMs(settings: Pick<Settings, "limits">): number | null {
  const ttl = settings.limits.idleSessionTtl;
  if (ttl === 0 || ttl === "off") return null;
  const ms = typeof ttl === "number" ? ttl * 1000 : parseDuration(ttl, "limits.idleSessionTtl");
  return ms > 0 ? ms : null;
}

/** Closes the ephemeral sessions idle past the TTL: what `veil serve` does every minute and `veil run` once at start. */
export async function closeExpiredSessions(deps: { store: Store; sessions: SessionManager; clock: Clock; settings: Pick<Settings, "limits"> }, options: { origins?: readonly string[] } = {}): Promise<SessionRow[]> {
  const ttl = idleSessionTtlMs(deps.settings);
  if (ttl === null) return [];
  const expired = (await idleSessions(deps.store, deps.clock.now(), ttl, { ephemeralOnly: true, statuses: ["idle"] })).filter((row) => !options.origins || options.origins.includes(row.origin));
  return (await closeSessions(deps.sessions, expired.map((row) => row.id), { runningElsewhere: true })).closed;
}

/**
 * `veil serve`'s housekeeping, once at start and then every `intervalMs`: closes expired
 * one-shot sessions, and lets go of sessions another process closed (`veil sessions close`
 * works on the store; their shells and timers here are ended on the next sweep).
 */
export class SessionSweeper {
  private cancel: (() => void) | null = null;
  private running: Promise<void> | null = null;

  constructor(private readonly deps: { store: Store; sessions: SessionManager; clock: Clock; log: Logger; settings: Pick<Settings, "limits">; intervalMs?: number }) {}

  /** Sweeps once (resolving when done), then every intervalMs. */
  start(): Promise<void> {
    if (this.cancel) return Promise.resolve();
    const arm = () => {
      this.cancel = this.deps.clock.setTimer(this.deps.intervalMs ?? 60_000, () => {
        arm();
        void this.sweep();
      });
    };
    arm();
    return this.sweep();
  }

  /** One sweep (a sweep already under way is awaited, not doubled). */
  sweep(): Promise<void> {
    this.running ??= (async () => {
      try {
        const closed = await closeExpiredSessions(this.deps);
        if (closed.length > 0) this.deps.log.info("closed one-shot sessions nobody continued", { sessions: closed.map((row) => row.id), idleSessionTtl: this.deps.settings.limits.idleSessionTtl });
        await this.deps.sessions.releaseClosedElsewhere();
      } catch (error) {
        this.deps.log.warn("session sweep failed (tried again at the next one)", { error: String(error) });
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  async stop(): Promise<void> {
    this.cancel?.();
    this.cancel = null;
    await this.running;
  }
}
