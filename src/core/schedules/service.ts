import type { Cron } from "croner";
import type { CreateSchedule, Schedule, ScheduleRun } from "../../base/schedules.js";
import type { IdGenerator } from "../../base/ids.js";
import type { AgentConfig } from "../../config/types.js";
import { VeilError } from "../../errors.js";
import type { ScheduleRow, ScheduleRunRow } from "../../store/store.js";
import type { Disposable } from "../../tools/types.js";
import { ScheduleRunner, type ScheduleRunnerDeps } from "./runner.js";
import { checkTiming, compileCron, firstDue } from "./timing.js";

/**
 * Whose schedules a caller sees: a key id (that key's only, the others are "not found"), or
 * undefined for an admin (every schedule).
 */
export type ScheduleScope = string | undefined;

export interface ScheduleServiceDeps extends Omit<ScheduleRunnerDeps, "disable"> {
  ids: IdGenerator;
  /** The agents known now; naming one not among them re-reads the agent folders at once. */
  agents(wanted?: string): Record<string, AgentConfig>;
  /** How often the stored schedules are read again (others' changes: another node, the CLI), ms. default: 5000 */
  resyncMs?: number;
  /** Delay before a due time missed while no node ran fires, ms. default: 500 */
  startupDelayMs?: number;
}

/** Key under which the runtime keeps the service (runtime.resources). */
export const SCHEDULES_SERVICE = "schedules";

const DEFAULT_RESYNC_MS = 5000;
const DEFAULT_STARTUP_DELAY_MS = 500;

interface Armed {
  row: ScheduleRow;
  cron?: Cron;
  due: number;
  cancel(): void;
}

/**
 * Schedules: prompts that start on their own, by cron (UTC) or at a fixed interval. The
 * rows live in the store; a serving runtime arms a timer per enabled schedule and reads
 * the rows again every few seconds, so a schedule created on another node or by the CLI
 * runs too, and each node can fire any due time (the store hands it to one of them).
 */
export class ScheduleService implements Disposable {
  private readonly armed = new Map<string, Armed>();
  private readonly runner: ScheduleRunner;
  private resyncCancel: (() => void) | null = null;
  private started = false;
  private disposed = false;

  constructor(private readonly deps: ScheduleServiceDeps) {
    this.runner = new ScheduleRunner({ ...deps, disable: (id, reason) => this.disableFor(id, reason) });
  }

  /** A schedule made by key `owner` (null: the server secret); it may only target that key's own session. */
  async create(input: CreateSchedule, owner: string | null = null): Promise<Schedule> {
    const { store, clock, ids } = this.deps;
    const agents = this.deps.agents(input.agent);
    if (!Object.hasOwn(agents, input.agent)) throw new VeilError("AGENT_NOT_FOUND", `no agent named "${input.agent}" (known: ${Object.keys(agents).join(", ")})`);
    if (input.prompt.trim() === "") throw new VeilError("VALIDATION_ERROR", '"prompt" must not be empty');
    const timing = checkTiming(input);
    const session = input.session ?? "new";
    if (session !== "new") await this.checkTargetSession(session, input.agent, owner);
    const now = clock.now();
    const at = new Date(now).toISOString();
    const shape = { cron: timing.cron ?? null, every_seconds: timing.everySeconds ?? null };
    const row = await store.createSchedule({
      id: ids.next("sch"),
      agent: input.agent,
      prompt: input.prompt,
      ...shape,
      session,
      enabled: input.enabled !== false,
      next_run_at: firstDue(shape, now),
      created_at: at,
      updated_at: at,
      owner_key: owner,
    });
    this.arm(row);
    return toInfo(row);
  }

  async list(scope?: ScheduleScope): Promise<Schedule[]> {
    return (await this.deps.store.listSchedules()).filter((row) => visible(row, scope)).map(toInfo);
  }

  async get(id: string, scope?: ScheduleScope): Promise<Schedule> {
    return toInfo(await this.row(id, scope));
  }

  /** Enabling starts afresh from now: times missed while disabled do not fire. */
  async setEnabled(id: string, enabled: boolean, scope?: ScheduleScope): Promise<Schedule> {
    const current = await this.row(id, scope);
    if (current.enabled === enabled) return toInfo(current);
    const now = this.deps.clock.now();
    const next = enabled ? firstDue(current, now) : current.next_run_at;
    const row = await this.deps.store.setScheduleEnabled(id, enabled, next, new Date(now).toISOString());
    if (!row) throw notFound(id);
    this.arm(row);
    return toInfo(row);
  }

  /** A run in flight goes on; its end is no longer recorded. */
  async delete(id: string, scope?: ScheduleScope): Promise<void> {
    if (scope !== undefined) await this.row(id, scope);
    if (!(await this.deps.store.deleteSchedule(id))) throw notFound(id);
    this.disarm(id);
  }

  /** Newest first. */
  async runs(id: string, limit = 100, scope?: ScheduleScope): Promise<ScheduleRun[]> {
    await this.row(id, scope);
    return (await this.deps.store.listScheduleRuns(id, limit)).map(toRunInfo);
  }

  /** Serving runtime: arms every enabled schedule (one due while no node ran fires once, shortly) and starts re-reading. */
  async start(): Promise<void> {
    if (this.started || this.disposed) return;
    this.started = true;
    await this.resync(this.deps.startupDelayMs ?? DEFAULT_STARTUP_DELAY_MS);
  }

  /** Settles once at least `count` runs of this node wait for a place among maxConcurrentRuns. */
  whenRunsWaiting(count: number): Promise<void> {
    return this.runner.whenWaiting(count);
  }

  /** Settles when no run started here is in flight. */
  idle(): Promise<void> {
    return this.runner.idle();
  }

  /** No due time fires from now on (the runtime is closing); runs in flight go on, those waiting for a place end. */
  stop(): void {
    this.disposed = true;
    this.runner.stop();
    this.resyncCancel?.();
    for (const id of [...this.armed.keys()]) this.disarm(id);
  }

  async dispose(): Promise<void> {
    this.stop();
    // Runs end with the sessions (shutdown cancels them); their ends are recorded before the store closes.
    await this.runner.idle();
  }

  private async resync(overdueDelayMs = 0): Promise<void> {
    try {
      const rows = await this.deps.store.listSchedules();
      const seen = new Set<string>();
      for (const row of rows) {
        seen.add(row.id);
        const armed = this.armed.get(row.id);
        if (!armed || armed.due !== row.next_run_at || !row.enabled) this.arm(row, overdueDelayMs);
        if (row.active_at !== null) await this.runner.sweep(row);
      }
      for (const id of [...this.armed.keys()]) if (!seen.has(id)) this.disarm(id);
    } catch (error) {
      this.deps.log.warn("could not read the schedules", { error: String(error) });
    }
    if (this.disposed) return;
    this.resyncCancel = this.deps.clock.setTimer(this.deps.resyncMs ?? DEFAULT_RESYNC_MS, () => void this.resync());
  }

  private arm(row: ScheduleRow, overdueDelayMs = 0): void {
    const previous = this.armed.get(row.id);
    this.disarm(row.id);
    if (!this.started || this.disposed || !row.enabled) return;
    const due = row.next_run_at;
    const now = this.deps.clock.now();
    const wait = due <= now ? overdueDelayMs : due - now;
    const cron = row.cron === null ? undefined : previous?.row.cron === row.cron && previous.cron ? previous.cron : compileCron(row.cron);
    const cancel = this.deps.clock.setTimer(wait, () => void this.onDue(row.id, due));
    this.armed.set(row.id, { row, cron, due, cancel });
  }

  private disarm(id: string): void {
    this.armed.get(id)?.cancel();
    this.armed.delete(id);
  }

  private async onDue(id: string, due: number): Promise<void> {
    const armed = this.armed.get(id);
    if (!armed || armed.due !== due || this.disposed) return;
    // The wall clock went back since the timer was set: wait the rest.
    if (due > this.deps.clock.now()) return this.arm(armed.row);
    try {
      const next = await this.runner.fire(armed.row, due, armed.cron);
      if (this.armed.get(id)?.due !== due) return; // re-armed meanwhile (a resync, a PATCH)
      if (next !== undefined) this.arm({ ...armed.row, next_run_at: next });
      else {
        // Another node took this due time, or the schedule changed: the stored row says what is next.
        const row = await this.deps.store.getSchedule(id);
        if (this.armed.get(id)?.due !== due) return;
        if (row) this.arm(row);
        else this.disarm(id);
      }
    } catch (error) {
      this.deps.log.warn("a schedule could not fire", { scheduleId: id, error: String(error) });
      // The next resync re-reads the row and arms it again.
      if (this.armed.get(id)?.due === due) this.disarm(id);
    }
  }

  private async disableFor(id: string, reason: string): Promise<void> {
    this.deps.log.warn(`schedule disabled: ${reason}`, { scheduleId: id });
    const row = await this.deps.store.getSchedule(id);
    if (!row?.enabled) return;
    const updated = await this.deps.store.setScheduleEnabled(id, false, row.next_run_at, new Date(this.deps.clock.now()).toISOString());
    if (updated) this.arm(updated);
  }

  private async checkTargetSession(sessionId: string, agent: string, owner: string | null): Promise<void> {
    const session = await this.deps.store.getSession(sessionId);
    // A key's schedule runs in its own sessions only: another's is, to it, no session.
    if (!session || (owner !== null && session.owner_key !== owner)) throw new VeilError("SESSION_NOT_FOUND", `no session "${sessionId}" (give "new" for a new session per run)`);
    if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${sessionId}" is closed`);
    if (session.agent !== agent) throw new VeilError("VALIDATION_ERROR", `session "${sessionId}" is of agent "${session.agent}", not "${agent}"`);
  }

  private async row(id: string, scope?: ScheduleScope): Promise<ScheduleRow> {
    const row = await this.deps.store.getSchedule(id);
    if (!row || !visible(row, scope)) throw notFound(id);
    return row;
  }
}

/** Another key's schedule is, to a key without admin, one that does not exist. */
const visible = (row: ScheduleRow, scope: ScheduleScope) => scope === undefined || row.owner_key === scope;

function notFound(id: string): VeilError {
  return new VeilError("SCHEDULE_NOT_FOUND", `no schedule "${id}"`);
}

export function toInfo(row: ScheduleRow): Schedule {
  return {
    id: row.id,
    agent: row.agent,
    prompt: row.prompt,
    cron: row.cron,
    everySeconds: row.every_seconds,
    session: row.session,
    enabled: row.enabled,
    nextRunAt: row.enabled ? new Date(row.next_run_at).toISOString() : null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    running: row.active_at === null ? null : { at: new Date(row.active_at).toISOString(), sessionId: row.active_session_id },
    ownerKey: row.owner_key,
  };
}

function toRunInfo(run: ScheduleRunRow): ScheduleRun {
  return { at: new Date(run.at).toISOString(), sessionId: run.session_id, status: run.status, ...(run.error ? { error: run.error } : {}), startedAt: run.started_at, finishedAt: run.finished_at };
}
