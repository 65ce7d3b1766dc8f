import type { Cron } from "croner";
import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { isVeilError } from "../../errors.js";
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
   * Several nodes: another node's mark whose session is not running counts as a cut run
   * (its node died) once it is this old, ms. default: 10000
   */
  staleAfterMs?: number;
}

const DEFAULT_KEEP_RUNS = 1000;
const DEFAULT_STALE_AFTER_MS = 10_000;

/**
 * Fires the due times of schedules. A due time is taken in the store (a compare-and-set
 * of next_run_at), so in a service of several nodes exactly one node fires it; a run
 * still going then makes that time `skipped`. A run goes into a new session of the
 * schedule's agent (which is let go of when the run ends) or into the schedule's session.
 */
export class ScheduleRunner {
  /** Runs of this node by schedule and due time, known here before their mark is stored. */
  private readonly inFlight = new Map<string, Map<number, Promise<void>>>();

  constructor(private readonly deps: ScheduleRunnerDeps) {}

  /**
   * Takes due time `due` of `row` and starts (or skips) its run. The schedule's next due
   * time, or undefined when another caller took `due` (or the schedule was disabled or
   * deleted): then the stored row says what comes next.
   */
  async fire(row: ScheduleRow, due: number, cron?: Cron): Promise<number | undefined> {
    const next = nextDueAfter(row, due, this.deps.clock.now(), cron);
    const before = await this.deps.store.claimScheduleDue(row.id, due, next);
    if (!before) return undefined;
    await this.startOrSkip(before, due);
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

  private async startOrSkip(row: ScheduleRow, due: number): Promise<void> {
    const { store, clock, nodeId } = this.deps;
    if (row.active_at !== null) {
      if (await this.stillGoing(row)) return this.record({ ...this.outcome(row.id, due, null), status: "skipped", error: `the run due at ${iso(row.active_at)} was still going` });
      await this.endInterrupted(row);
    }
    // Known here before the mark is stored, so a read of the mark on this node (a resync) finds the run.
    let settle!: () => void;
    this.runsOf(row.id).set(due, new Promise<void>((resolve) => (settle = resolve)));
    const ended = () => {
      this.forget(row.id, due);
      settle();
    };
    let marked = false;
    try {
      // False only when another run was marked since the claim read the row.
      marked = await store.beginScheduleRun(row.id, due, nodeId, clock.now());
    } finally {
      if (!marked) ended();
    }
    if (!marked) return this.record({ ...this.outcome(row.id, due, null), status: "skipped", error: "another run was still going" });
    void this.execute(row, due).finally(ended);
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

  /** Whether the run marked in `row` still goes on (this node knows its own; another node's is judged by its session). */
  private async stillGoing(row: ScheduleRow): Promise<boolean> {
    if (row.active_node === this.deps.nodeId) return this.inFlight.get(row.id)?.has(row.active_at!) === true;
    if (this.deps.singleNode) return false;
    if (this.deps.clock.now() - (row.active_started_at ?? 0) < (this.deps.staleAfterMs ?? DEFAULT_STALE_AFTER_MS)) return true;
    if (!row.active_session_id) return false;
    return (await this.deps.store.getSession(row.active_session_id))?.status === "running";
  }

  private async execute(row: ScheduleRow, due: number): Promise<void> {
    const { store, sessions, log } = this.deps;
    const fresh = row.session === "new";
    let sessionId: string | null = fresh ? null : row.session;
    let result: Pick<ScheduleRunRow, "status" | "error"> = { status: "ok", error: null };
    try {
      sessionId ??= (await sessions.create({ agent: row.agent })).id;
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
    try {
      await store.endScheduleRun({ ...this.outcome(row.id, due, sessionId), ...result }, this.keep);
    } catch (error) {
      log.warn("could not record the end of a scheduled run", { scheduleId: row.id, error: String(error) });
    }
    if (fresh && sessionId) await sessions.release(sessionId).catch((error) => log.warn("could not let go of a scheduled run's session", { sessionId, error: String(error) }));
  }

  private async endInterrupted(row: ScheduleRow): Promise<void> {
    const run = { ...this.outcome(row.id, row.active_at!, row.active_session_id), status: "error" as const, error: "INTERRUPTED: the process running it stopped before the run ended" };
    await this.deps.store.endScheduleRun(run, this.keep);
  }

  private async record(run: ScheduleRunRow): Promise<void> {
    await this.deps.store.addScheduleRun(run);
  }

  private outcome(scheduleId: string, at: number, sessionId: string | null): ScheduleRunRow {
    return { schedule_id: scheduleId, at, session_id: sessionId, status: "ok", error: null, finished_at: iso(this.deps.clock.now()) };
  }

  private get keep(): number {
    return this.deps.keepRuns ?? DEFAULT_KEEP_RUNS;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
