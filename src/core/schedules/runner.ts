import type { Cron } from "croner";
import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { isVeilError, VeilError } from "../../errors.js";
import type { ScheduleRow, ScheduleRunRow, SessionRow, Store } from "../../store/store.js";
import type { CreateSessionInput, SendOptions, SendReceipt } from "../session-types.js";
import { nextDueAfter } from "./timing.js";

/** What a schedule's run needs of the session manager. */
export interface ScheduleSessions {
  create(input: CreateSessionInput): Promise<SessionRow>;
  send(id: string, message: string, options?: SendOptions): Promise<SendReceipt>;
  /** Lets go of an idle session's live state; it stays open. */
  release(id: string): Promise<void>;
}

export interface ScheduleRunnerDeps {
  store: Store;
  clock: Clock;
  log: Logger;
  /** This process's name in run marks. */
  nodeId: string;
  sessions: ScheduleSessions;
  /**
   * True when no other process runs schedules on this store: a run mark of another node is
   * then a run the last process left when it stopped.
   */
  singleNode: boolean;
  /** A schedule whose own session is gone: stop it. */
  disable(scheduleId: string, reason: string): Promise<void>;
  /** Runs kept per schedule. default: 1000 */
  keepRuns?: number;
  /**
   * Several nodes: another node's mark not seen for this long counts as a cut run (its node
   * died or lost the database), ms. default: 30000
   */
  staleAfterMs?: number;
  /** How often this node says its runs go on (several nodes), ms. default: 5000 */
  heartbeatMs?: number;
  /** Runs of schedules this node runs at once; more wait for a place. default: 64 */
  maxConcurrentRuns?: number;
}

const DEFAULT_KEEP_RUNS = 1000;
const DEFAULT_STALE_AFTER_MS = 30_000;
const DEFAULT_HEARTBEAT_MS = 5000;
const DEFAULT_MAX_CONCURRENT_RUNS = 64;

/**
 * Fires the due times of schedules. A due time is taken in the store (a compare-and-set
 * of next_run_at), so in a service of several nodes exactly one node fires it; a run
 * still going then makes that time `skipped`. A run goes into a new session of the
 * schedule's agent (which is let go of when the run ends) or into the schedule's session.
 */
export class ScheduleRunner {
  /** Runs of this node by schedule and due time, known here before their mark is stored. */
  private readonly inFlight = new Map<string, Map<number, Promise<void>>>();
  /** Runs holding a place (maxConcurrentRuns) and those waiting for one. */
  private running = 0;
  private readonly waiting: { resolve: () => void; reject: (error: Error) => void }[] = [];
  /** Callers of whenWaiting, each told once that many runs wait for a place. */
  private readonly waitingWatchers: { count: number; resolve: () => void }[] = [];
  private stopped = false;
  private heartbeat: (() => void) | null = null;

  constructor(private readonly deps: ScheduleRunnerDeps) {}

  /**
   * Takes due time `due` of `row` and starts (or skips) its run. The schedule's next due
   * time, or undefined when another caller took `due` (or the schedule was disabled or
   * deleted): then the stored row says what comes next.
   */
  async fire(row: ScheduleRow, due: number, cron?: Cron): Promise<number | undefined> {
    const { store, clock, nodeId } = this.deps;
    const now = clock.now();
    const next = nextDueAfter(row, due, now, cron);
    // Known here before the mark is stored, so a read of the mark on this node (a resync) finds the run.
    const run = this.track(row.id, due);
    let claim: Awaited<ReturnType<Store["claimScheduleDue"]>>;
    try {
      claim = await store.claimScheduleDue(row.id, due, next, nodeId, now);
    } catch (error) {
      run.ended();
      throw error;
    }
    if (!claim) {
      run.ended();
      return undefined;
    }
    let startedAt = claim.began ? now : null;
    try {
      startedAt ??= await this.takeOver(claim.before, due);
    } catch (error) {
      run.ended();
      throw error;
    }
    if (startedAt !== null) void this.execute(claim.before, due, startedAt).finally(run.ended);
    else run.ended();
    return next;
  }

  /** Ends a run mark that nobody will end (the process running it stopped), recording the run as cut. */
  async sweep(row: ScheduleRow): Promise<void> {
    if (row.active_at !== null && !(await this.stillGoing(row))) await this.endInterrupted(row);
  }

  /** Settles when no run started here is in flight. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()].flatMap((runs) => [...runs.values()]));
  }

  /** Runs taken at their due time that wait for a place (maxConcurrentRuns) right now. */
  get waitingRuns(): number {
    return this.waiting.length;
  }

  /** Settles once at least `count` runs wait for a place at the same time. */
  whenWaiting(count: number): Promise<void> {
    if (this.waiting.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waitingWatchers.push({ count, resolve }));
  }

  /** No run starts from now on (the runtime is closing): those waiting for a place end as CANCELLED. */
  stop(): void {
    this.stopped = true;
    this.heartbeat?.();
    this.heartbeat = null;
    for (const waiter of this.waiting.splice(0)) waiter.reject(new VeilError("CANCELLED", "the server stopped before the run began"));
  }

  /**
   * The claim found an earlier run's mark: a run still going makes `due` skipped (null); a
   * mark its process left is ended as cut and `due`'s run marked instead (when, epoch ms).
   */
  private async takeOver(before: ScheduleRow, due: number): Promise<number | null> {
    const { store, clock, nodeId } = this.deps;
    if (await this.stillGoing(before)) {
      await this.record({ ...this.outcome(before.id, due, null, null), status: "skipped", error: `the run due at ${iso(before.active_at!)} was still going` });
      return null;
    }
    await this.endInterrupted(before);
    const startedAt = clock.now();
    // False only when another run was marked since the claim read the row.
    if (await store.beginScheduleRun(before.id, due, nodeId, startedAt)) return startedAt;
    await this.record({ ...this.outcome(before.id, due, null, null), status: "skipped", error: "another run was still going" });
    return null;
  }

  /** A place among maxConcurrentRuns: at once while there is one, else when a run ends. */
  private async place(): Promise<void> {
    if (this.stopped) throw new VeilError("CANCELLED", "the server stopped before the run began");
    if (this.running < (this.deps.maxConcurrentRuns ?? DEFAULT_MAX_CONCURRENT_RUNS)) {
      this.running++;
      return;
    }
    const placed = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    this.tellWaiting();
    await placed;
  }

  private tellWaiting(): void {
    for (let i = this.waitingWatchers.length - 1; i >= 0; i--) {
      const watcher = this.waitingWatchers[i]!;
      if (this.waiting.length < watcher.count) continue;
      this.waitingWatchers.splice(i, 1);
      watcher.resolve();
    }
  }

  /** Hands the place to the next waiting run, if any. */
  private leave(): void {
    const next = this.waiting.shift();
    if (next) next.resolve();
    else this.running--;
  }

  /** Registers the run of `due` as this node's; `ended()` forgets it and settles idle(). */
  private track(scheduleId: string, due: number): { ended: () => void } {
    this.beat();
    let settle!: () => void;
    this.runsOf(scheduleId).set(due, new Promise<void>((resolve) => (settle = resolve)));
    return {
      ended: () => {
        this.forget(scheduleId, due);
        settle();
      },
    };
  }

  private runsOf(scheduleId: string): Map<number, Promise<void>> {
    let runs = this.inFlight.get(scheduleId);
    if (!runs) this.inFlight.set(scheduleId, (runs = new Map()));
    return runs;
  }

  private forget(scheduleId: string, due: number): void {
    const runs = this.inFlight.get(scheduleId);
    runs?.delete(due);
    if (runs?.size === 0) this.inFlight.delete(scheduleId);
  }

  /**
   * Whether the run marked in `row` still goes on. This node knows its own; another node
   * says so of its runs every few seconds (a run waiting for a place included), so a mark
   * not seen for staleAfterMs was left by a node that died.
   */
  private async stillGoing(row: ScheduleRow): Promise<boolean> {
    if (row.active_node === this.deps.nodeId) return this.inFlight.get(row.id)?.has(row.active_at!) === true;
    if (this.deps.singleNode) return false;
    return this.deps.clock.now() - (row.active_seen_at ?? 0) < (this.deps.staleAfterMs ?? DEFAULT_STALE_AFTER_MS);
  }

  /** Several nodes: while runs of this node are in flight, their marks are seen every heartbeatMs. */
  private beat(): void {
    if (this.deps.singleNode || this.heartbeat || this.stopped) return;
    const { store, clock, log, nodeId } = this.deps;
    this.heartbeat = clock.setTimer(this.deps.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, () => {
      this.heartbeat = null;
      if (this.inFlight.size === 0) return;
      void store
        .touchScheduleRuns(nodeId, clock.now())
        .catch((error) => log.warn("could not renew this node's scheduled runs", { error: String(error) }))
        .finally(() => this.beat());
    });
  }

  private async execute(row: ScheduleRow, due: number, startedAt: number): Promise<void> {
    const { store, sessions, log } = this.deps;
    const fresh = row.session === "new";
    let sessionId: string | null = fresh ? null : row.session;
    let result: Pick<ScheduleRunRow, "status" | "error"> = { status: "ok", error: null };
    let placed = false;
    try {
      await this.place();
      placed = true;
      sessionId ??= (await sessions.create({ agent: row.agent, origin: "schedule", owner_key: row.owner_key })).id;
      await store.setScheduleRunSession(row.id, due, sessionId);
      const receipt = await sessions.send(sessionId, row.prompt, { meta: { source: "schedule", scheduleId: row.id, dueAt: iso(due) }, warmUp: false });
      const ended = await receipt.result;
      if (ended.stopReason === "error" || ended.stopReason === "cancelled") {
        const error = ended.error ?? (ended.stopReason === "cancelled" ? { code: "CANCELLED", message: "the run was cancelled before it ended (a client, or the server stopping)" } : { code: "INTERNAL_ERROR", message: "the run failed" });
        result = { status: "error", error: `${error.code}: ${error.message}` };
      }
    } catch (error) {
      const code = isVeilError(error) ? error.code : "INTERNAL_ERROR";
      result = { status: "error", error: `${code}: ${(error as Error).message}` };
      if (!fresh && (code === "SESSION_CLOSED" || code === "SESSION_NOT_FOUND")) await this.deps.disable(row.id, `its session ${row.session} is ${code === "SESSION_CLOSED" ? "closed" : "gone"}`);
    }
    if (placed) this.leave();
    try {
      await store.endScheduleRun({ ...this.outcome(row.id, due, sessionId, startedAt), ...result }, this.keep);
    } catch (error) {
      log.warn("could not record the end of a scheduled run", { scheduleId: row.id, error: String(error) });
    }
    if (fresh && sessionId) await sessions.release(sessionId).catch((error) => log.warn("could not let go of a scheduled run's session", { sessionId, error: String(error) }));
  }

  private async endInterrupted(row: ScheduleRow): Promise<void> {
    const run = { ...this.outcome(row.id, row.active_at!, row.active_session_id, row.active_seen_at), status: "error" as const, error: "INTERRUPTED: the process running it stopped before the run ended" };
    await this.deps.store.endScheduleRun(run, this.keep);
  }

  private async record(run: ScheduleRunRow): Promise<void> {
    await this.deps.store.addScheduleRun(run);
  }

  private outcome(scheduleId: string, at: number, sessionId: string | null, startedAt: number | null): ScheduleRunRow {
    return { schedule_id: scheduleId, at, session_id: sessionId, status: "ok", error: null, started_at: startedAt === null ? null : iso(startedAt), finished_at: iso(this.deps.clock.now()) };
  }

  private get keep(): number {
    return this.deps.keepRuns ?? DEFAULT_KEEP_RUNS;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
