import { setMaxListeners } from "node:events";
import { VeilError } from "../errors.js";
import type { RunResult } from "../engines/types.js";
import { selectEngine } from "../engines/select.js";
import type { ControlAction, ControlArgs } from "../store/cluster.js";
import type { InboxItem, SessionRow, SessionStatus } from "../store/store.js";
import { toUserMessage, type ChatContent } from "./chat-content.js";
import { runOptionsOf, withRunOptions } from "./inbox-run-options.js";
import type { RunObserver } from "./recorder.js";
import type { Resources } from "./resources.js";
import { prepareRun, type RunSetupDeps } from "./run-setup.js";
import type { CompactionOutcome } from "./compaction/session-context.js";
import { createLiveSession, priceOf, type ActiveRun, type LiveSession } from "./live-session.js";
import { SessionWriter } from "./session-writer.js";
import { recordSessionStart, screenPrompt } from "./session-hooks.js";
import type { SessionPlacement } from "./placement.js";
import { createSession } from "./session-create.js";
import { checkModelReady } from "./model-ready.js";
import { renameSession, titleFromFirstMessage } from "./session-title.js";
import { SessionTeardown } from "./session-teardown.js";
import { runInbox } from "./inbox-drain.js";
import { executeRun, turnParent, type RunHost } from "./run.js";
import type { RevertOutcome } from "./checkpoints/revert.js";
import { forkSession, revertSession, unrevertSession, type RewindHost } from "./checkpoints/session-rewind.js";
import { RunObservers } from "./run-observers.js";
import type { CreateSessionInput, SendOptions, SendReceipt, SessionManagerDeps } from "./session-types.js";
import type { Store } from "../store/store.js";
import type { ToolServices } from "../tools/services.js";

export type { RunObserver } from "./recorder.js";
export type { RunFence, SessionPlacement } from "./placement.js";
export type { CreateSessionInput, SendOptions, SendReceipt, SessionManagerDeps } from "./session-types.js";

/**
 * Owns sessions at run time: one run per session at a time, a durable inbox for
 * messages that arrive mid-run (drained at the next iteration boundary),
 * cancel/suspend/resume/close, and recovery after a restart.
 */
export class SessionManager {
  private readonly live = new Map<string, LiveSession>();
  private readonly observers = new RunObservers();
  private readonly teardown: SessionTeardown;
  private readonly resumeListeners = new Set<(sessionId: string) => void | Promise<void>>();
  /** Sessions being let go of (release()): a message or control waits until that is done. */
  private readonly releasing = new Map<string, Promise<void>>();
  /** Set by shutdown(): no new run may start (e.g. a sub-agent reply arriving while runs are being stopped). */
  private stopping = false;

  private readonly setup: RunSetupDeps;
  private readonly runHost: RunHost;
  /** Where sessions run and what their writes go through (one process, or a cluster's leases). */
  private readonly placement: SessionPlacement;
  /** What tools reach through ctx.services (built from this manager, once). */
  readonly services: ToolServices;
  private readonly rewindHost: RewindHost;

  constructor(private readonly deps: SessionManagerDeps) {
    this.placement = deps.placement;
    this.services = Object.freeze(deps.services(this));
    this.setup = { ...deps, services: this.services, toolsUpFront: (modelKey) => selectEngine(deps.engines, modelKey).toolsUpFront === true };
    this.runHost = this.createRunHost();
    this.teardown = new SessionTeardown(deps, this.live);
    const { store, ids, checkpoints: tracker } = deps;
    this.rewindHost = { store, ids, tracker, get: (id) => this.get(id), isRunning: (id) => this.isRunning(id), create: (input) => this.create(input), fenced: (id, write) => this.fenced(id, write) };
  }

  /**
   * Sessions this process holds now (created or used here, not closed): what costs memory and
   * shells, and what limits.maxLiveSessions counts. Open sessions in the store that no process
   * holds (a hundred one-shot `veil run`s, a server's sessions before its restart) cost nothing.
   */
  get liveCount(): number {
    return this.live.size;
  }

  async create(input: CreateSessionInput): Promise<SessionRow> {
    const row = await createSession(this.deps, input, this.live.size, (id) => this.writer(id));
    this.liveFor(row.id);
    return row;
  }

  async get(id: string): Promise<SessionRow> {
    const session = await this.deps.store.getSession(id);
    if (!session) throw new VeilError("SESSION_NOT_FOUND", `no session "${id}"`);
    return session;
  }

  /** The key a turn would use, once its engine has what it needs; CONFIG_ERROR names what is missing (see model-ready.ts). */
  checkModelReady(session: Pick<SessionRow, "agent" | "model">, perCallModel?: string): Promise<string> {
    return checkModelReady(this.deps, session, perCallModel);
  }

  /** The caller's title (null clears); a session someone names is kept (no longer ephemeral). */
  async rename(id: string, title: string | null): Promise<SessionRow> {
    return renameSession(this.writer(id), title);
  }

  /** Someone came back to a one-shot session (`--continue`, `agent/<name>/<id>`, a chat over HTTP): it is no longer closed when idle. */
  async keep(id: string): Promise<SessionRow> {
    const session = await this.get(id);
    return session.ephemeral ? this.writer(id).keep() : session;
  }

  isRunning(id: string): boolean {
    return Boolean(this.live.get(id)?.run);
  }

  /** Resolves when the session has no run (immediately if idle). */
  async waitIdle(id: string): Promise<void> {
    for (let run = this.live.get(id)?.run; run; run = this.live.get(id)?.run) await run.done;
  }

  /**
   * POST /sessions/:id/compact: both stages whatever the size. A running session compacts at
   * its next boundary (or when its run ends); any other open session now.
   */
  async compact(id: string): Promise<CompactionOutcome> {
    return this.routed(id, "compact", () => this.compactHere(id));
  }

  private async compactHere(id: string): Promise<CompactionOutcome> {
    const session = await this.get(id);
    if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${id}" is closed`);
    const live = this.liveFor(id);
    if (live.closing) throw new VeilError("SESSION_CLOSED", `session "${id}" is closing`);
    if (live.run) return live.context.requestCompaction();
    return this.fenced(id, async (writer) => {
      const turn = await prepareRun(this.setup, session, {}, live.resources, writer);
      return live.context.compactNow(turn.context, turn.rows, session.context_size, writer.contextWriter((usage, model) => priceOf(this.deps.config.models, usage, model)));
    });
  }

  /** A write of an idle session (compaction, revert) through a fence of its own, like a run's. */
  private async fenced<T>(id: string, write: (writer: SessionWriter) => Promise<T>): Promise<T> {
    const fence = await this.placement.openRun(id, this.liveFor(id));
    if (!fence) throw new VeilError("LEASE_LOST", `session "${id}" is held by another node`);
    try {
      return await write(this.writer(id, fence.store));
    } finally {
      fence.close();
    }
  }

  /**
   * Accepts a user message: stored durably in the inbox before this resolves,
   * then delivered at once (idle session) or at the next boundary (running).
   * `message` is text or OpenAI content parts (stored as chat-content.ts describes).
   */
  async send(id: string, message: ChatContent, options: SendOptions = {}): Promise<SendReceipt> {
    await this.releasing.get(id);
    const user = toUserMessage(message, options.meta);
    let content = user.content;
    const meta = user.meta;
    const session = await this.get(id);
    if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${id}" is closed`);
    if (session.status === "suspended") throw new VeilError("SESSION_SUSPENDED", `session "${id}" is suspended; resume it first`);
    if (this.stopping) throw new VeilError("CANCELLED", "the runtime is shutting down");
    const live = this.liveFor(id);
    if (live.closing) throw new VeilError("SESSION_CLOSED", `session "${id}" is closing`);
    // An output schema binds the final answer of the run its message starts; a running run's answer is not that.
    if (options.outputSchema && (live.run || session.status === "running")) {
      throw new VeilError("SESSION_BUSY", `session "${id}" is running a turn; a message with an output schema must start its own turn (send it once the session is idle)`);
    }
    // Before anything is stored: a blocked prompt leaves no trace but the hook.run event.
    content = await screenPrompt(this.deps.hooks, id, content, options.meta);
    const messageId = this.deps.ids.next("msg");
    let resolve!: (r: RunResult) => void;
    const result = new Promise<RunResult>((r) => (resolve = r));
    live.pending.set(messageId, { resolve, perCall: options });
    live.inbox.changed();
    try {
      // The run that takes the message may start from the row alone (after a restart, or on the node that holds the session).
      await this.deps.store.addInbox({ id: messageId, session_id: id, content, meta: withRunOptions(meta, this.traced(options)), created_at: new Date(this.deps.clock.now()).toISOString() });
    } catch (error) {
      live.pending.delete(messageId);
      throw error;
    }
    if (session.title === null) await titleFromFirstMessage(this.writer(id), this.deps.log, message);
    const delivery = live.run ? "queued" : "started";
    if (!live.run) {
      this.placement.startOrAwait(id, live, messageId, () => {
        if (!live.run && !this.stopping) this.startRun(id, options);
      });
    }
    return { messageId, delivery, result };
  }

  /**
   * The options with the traceparent of the span the message's turn hangs under (a
   * sub-agent's message: the call that sent it), so a run started from the stored row alone
   * still joins the trace.
   */
  private traced(options: SendOptions): SendOptions {
    if (options.traceparent || !this.deps.telemetry?.traceparentOf) return options;
    const parent = turnParent(options);
    const traceparent = parent ? this.deps.telemetry.traceparentOf(parent) : null;
    return traceparent ? { ...options, traceparent } : options;
  }

  /** Cooperative cancel; resolves when the run has stopped. Idempotent. */
  async cancel(id: string): Promise<boolean> {
    return this.routed(id, "cancel", () => this.cancelHere(id));
  }

  private async cancelHere(id: string): Promise<boolean> {
    await this.get(id);
    const run = this.live.get(id)?.run;
    if (!run) return false;
    run.controller.abort(new VeilError("CANCELLED", "cancelled"));
    await run.done;
    return true;
  }

  async suspend(id: string): Promise<SessionRow> {
    return this.routed(id, "suspend", () => this.suspendHere(id));
  }

  private async suspendHere(id: string): Promise<SessionRow> {
    const session = await this.get(id);
    if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${id}" is closed`);
    const run = this.live.get(id)?.run;
    if (run) run.stopRequest = "suspended";
    return this.setStatus(id, "suspended", "suspended");
  }

  async resume(id: string): Promise<SessionRow> {
    return this.routed(id, "resume", () => this.resumeHere(id));
  }

  private async resumeHere(id: string): Promise<SessionRow> {
    const session = await this.get(id);
    if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${id}" is closed`);
    if (session.status !== "suspended") return session;
    const live = this.liveFor(id);
    if (live.run) await live.run.done;
    const row = await this.setStatus(id, "idle", "resumed");
    await recordSessionStart(this.deps.hooks, this.writer(id), "resume");
    for (const listener of this.resumeListeners) await listener(id);
    if (!live.run && (await this.deps.store.listInbox(id)).length > 0) this.startRun(id, {});
    return row;
  }

  /** Puts back the files of the turns from `messageId` on and takes those turns out of the history (checkpoints/session-rewind.ts), where the session runs. */
  revert(id: string, messageId: string): Promise<RevertOutcome> {
    return this.routed(id, "revert", () => revertSession(this.rewindHost, id, messageId), { messageId });
  }

  /** Undoes the last revert while no message came since (else CONFLICT), where the session runs. */
  unrevert(id: string): Promise<RevertOutcome> {
    return this.routed(id, "unrevert", () => unrevertSession(this.rewindHost, id));
  }

  /** A new session whose history is a copy of this one's up to the turn of `messageId`, made where the session runs. */
  fork(id: string, messageId?: string): Promise<SessionRow> {
    return this.routed(id, "fork", () => forkSession(this.rewindHost, id, messageId), messageId === undefined ? {} : { messageId });
  }

  /** Cancels the run, kills the session's resources (shells), notifies listeners (timers, methods). */
  async close(id: string): Promise<SessionRow> {
    return this.routed(id, "close", () => this.closeHere(id));
  }

  /** The owner's side of a control request another node forwarded (core/cluster/control.ts). */
  controlHere(id: string, action: ControlAction, args: ControlArgs = {}): Promise<unknown> {
    switch (action) {
      case "revert":
        if (args.messageId === undefined) return Promise.reject(new VeilError("VALIDATION_ERROR", "a forwarded revert carries no messageId"));
        return revertSession(this.rewindHost, id, args.messageId);
      case "unrevert":
        return unrevertSession(this.rewindHost, id);
      case "fork":
        return forkSession(this.rewindHost, id, args.messageId);
      case "cancel":
        return this.cancelHere(id);
      case "suspend":
        return this.suspendHere(id);
      case "resume":
        return this.resumeHere(id);
      case "close":
        return this.closeHere(id);
      case "compact":
        return this.compactHere(id);
    }
  }

  /**
   * Lets go of an idle session's live state (its shells, tools, and its place under
   * limits.maxLiveSessions) while the session stays open: its next message builds that state
   * again from the store. Sessions that started on their own (a schedule's, a webhook's) are
   * let go of when their run ends, so thousands of them cost rows, not processes. Waits for
   * a run to end; does nothing when messages are waiting.
   */
  async release(id: string): Promise<void> {
    await this.waitIdle(id);
    const live = this.live.get(id);
    if (!live || live.run || live.closing || live.pending.size > 0 || live.consumed.length > 0 || this.releasing.has(id)) return;
    this.live.delete(id);
    const done = (async () => {
      live.context.abandon(new VeilError("CANCELLED", `session "${id}" was let go of while idle`));
      this.deps.hooks?.endSession(id);
      await live.resources.dispose();
      // Cluster: heartbeats stop renewing its lease; the node its next message reaches takes it.
      await this.placement.release(id);
    })().finally(() => this.releasing.delete(id));
    this.releasing.set(id, done);
    await done;
  }

  /** The action runs where the session runs (after a release of it here has ended). */
  private async routed<T>(id: string, action: ControlAction, here: () => Promise<T>, args: ControlArgs = {}): Promise<T> {
    await this.releasing.get(id);
    return this.placement.control(id, action, here, args);
  }

  private async closeHere(id: string): Promise<SessionRow> {
    const session = await this.get(id);
    if (session.status === "closed") return session;
    await this.teardown.tearDown(id, this.liveFor(id));
    return this.setStatus(id, "closed", "closed");
  }

  /**
   * Sessions this process holds that another process closed in the store (`veil sessions
   * close` works there): their shells, timers and sub-agents here are ended too.
   */
  releaseClosedElsewhere(): Promise<string[]> {
    return this.teardown.releaseClosedElsewhere();
  }

  onClose(listener: (sessionId: string) => void | Promise<void>): () => void {
    return this.teardown.onClose(listener);
  }

  onResume(listener: (sessionId: string) => void | Promise<void>): () => void {
    this.resumeListeners.add(listener);
    return () => void this.resumeListeners.delete(listener);
  }

  /** Observes the runs of one session (multi-agent delivery rules hang off this). */
  observe(sessionId: string, observer: RunObserver): () => void {
    return this.observers.observe(sessionId, observer);
  }

  /** Observes the runs of every session on this node. */
  observeEvery(observer: RunObserver): () => void {
    return this.observers.observeEvery(observer);
  }

  /** After a restart: no run survives, dangling tool calls get placeholders. */
  async recoverRuns(): Promise<void> {
    for (const session of await this.deps.store.listSessions({ status: "running" })) {
      if (await this.placement.claim(session.id)) await this.recoverRun(session.id);
    }
  }

  /** A run cut by a crash (here or on a dead node): placeholders for its open calls (published), session idle. */
  async recoverRun(id: string): Promise<void> {
    if (this.live.get(id)?.run) return;
    const writer = this.writer(id);
    await writer.closeDanglingCalls();
    if ((await this.deps.store.getSession(id))?.status === "running") await writer.setStatus("idle", "recovered");
  }

  /** Starts runs for messages still waiting in the inbox (after recoverRuns; serve mode only). */
  async resumeInboxes(): Promise<void> {
    for (const id of await this.deps.store.sessionsWithInbox()) {
      if (await this.placement.claim(id)) await this.resumeInbox(id);
    }
  }

  /**
   * The session's budget_override was written (agent_control update-session): a run here
   * reads it again before its next model call. A run on another node rereads it within
   * BUDGET_RECHECK_MS.
   */
  budgetChanged(id: string): void {
    this.live.get(id)?.budget.changed();
  }

  /** Starts a run when the idle session has queued messages (another node queued one, the session was taken over). */
  async resumeInbox(id: string): Promise<void> {
    // A row queued from elsewhere: a run here reads it at its next boundary.
    this.live.get(id)?.inbox.changed();
    if (this.stopping || this.live.get(id)?.run) return;
    await this.startIfQueued(id, (first) => runOptionsOf(first));
  }

  /**
   * Another process writes the session now (it took the session's lease). Its run here has
   * been aborted through its fence; once it has stopped, the session's tools and shells here
   * are disposed. Returns what this process held of it, whose waiting messages the caller
   * hands to the new owner (undefined: nothing, or a new run here holds it again).
   */
  async moved(id: string): Promise<LiveSession | undefined> {
    const live = this.live.get(id);
    if (!live) return undefined;
    await this.waitIdle(id);
    if (this.live.get(id) !== live || live.run) return undefined;
    this.live.delete(id);
    live.context.abandon(new VeilError("LEASE_LOST", `session "${id}" moved to another node`));
    await live.resources.dispose();
    this.deps.log.warn("session moved to another node: its run, tools and shells here are stopped", { sessionId: id });
    return live;
  }

  /** Stops every run and disposes every session's resources (server shutdown). */
  async shutdown(): Promise<void> {
    this.stopping = true;
    const runs = [...this.live.values()].map((live) => {
      live.run?.controller.abort(new VeilError("CANCELLED", "server shutting down"));
      return live.run?.done;
    });
    await Promise.allSettled(runs);
    await Promise.allSettled([...this.live.values()].map((live) => live.resources.dispose()));
    this.live.clear();
  }

  sessionResources(id: string): Resources {
    return this.liveFor(id).resources;
  }

  private liveFor(id: string): LiveSession {
    let live = this.live.get(id);
    if (!live) {
      live = createLiveSession(id, this.deps);
      this.live.set(id, live);
    }
    return live;
  }

  private setStatus(id: string, status: SessionStatus, reason: string): Promise<SessionRow> {
    return this.writer(id).setStatus(status, reason);
  }

  /** The writer of a session outside any run (control actions, recovery, the SessionStart hook). */
  private writer(id: string, store: Store = this.deps.store): SessionWriter {
    const { events, ids, clock } = this.deps;
    return new SessionWriter({ sessionId: id, store, events, ids, now: () => clock.now() });
  }

  /** Starts a run synchronously-registered, so a concurrent send sees it and queues. */
  private startRun(id: string, perCall: SendOptions): void {
    const live = this.liveFor(id);
    const controller = new AbortController();
    // Every parallel tool call listens on the run's signal; many calls are legitimate.
    setMaxListeners(0, controller.signal);
    const run: ActiveRun = { controller, stopRequest: null, done: undefined as unknown as Promise<RunResult> };
    live.run = run;
    run.done = executeRun(this.runHost, id, live, run, perCall).finally(() => {
      if (live.run === run) live.run = null;
    });
    void run.done.then(() => this.startQueued(id, live));
  }

  /** A message that arrived after the run's last boundary starts the next run. */
  private async startQueued(id: string, live: LiveSession): Promise<void> {
    if (this.stopping || live.closing || live.run) return;
    // A session another node holds now is run there.
    if (!this.placement.holds(id)) return;
    try {
      await this.startIfQueued(id, () => ({}));
    } catch (error) {
      // The runtime may be closing its store meanwhile: the queued message stays durable for the next start.
      this.deps.log.warn("could not check for queued messages after a run", { sessionId: id, error: String(error) });
    }
  }

  /** Starts a run when the session is idle with messages waiting and nothing started one meanwhile. */
  private async startIfQueued(id: string, optionsOf: (first: InboxItem) => SendOptions): Promise<void> {
    const session = await this.deps.store.getSession(id);
    if (session?.status !== "idle" || this.live.get(id)?.run) return;
    const inbox = await this.deps.store.listInbox(id);
    if (inbox.length > 0 && !this.live.get(id)?.run && !this.stopping) this.startRun(id, optionsOf(inbox[0]!));
  }

  /** What a run started here may use of this manager (core/run.ts). */
  private createRunHost(): RunHost {
    return {
      deps: this.deps,
      setup: this.setup,
      placement: this.placement,
      recorderObservers: (id) => this.observers.forRun(id),
      sessionObservers: (id) => this.observers.of(id),
      getSession: (id) => this.get(id),
      inbox: (id, live, recorder) => runInbox(id, live, recorder, this.deps.store, this.placement),
    };
  }
}
