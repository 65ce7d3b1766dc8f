import { setMaxListeners } from "node:events";
import type { Budget, ReasoningConfig } from "../config/types.js";
import { VeilError } from "../errors.js";
import type { Engine, RunIO, RunResult } from "../engines/types.js";
import { selectEngine } from "../engines/select.js";
import type { ControlAction } from "../store/cluster.js";
import type { MessageRow, NewSession, SessionRow, SessionStatus } from "../store/store.js";
import { ZERO_USAGE } from "../store/store.js";
import { rowsToMessages } from "./context-builder.js";
import { toUserMessage, type ChatContent } from "./chat-content.js";
import { closeDanglingToolCalls } from "./history.js";
import { runOptionsOf, withoutRunOptions, withRunOptions } from "./inbox-run-options.js";
import { modeConfig } from "../tools/permissions.js";
import { RunRecorder, type RunObserver } from "./recorder.js";
import type { Resources } from "./resources.js";
import { prepareRun, type RunSetupDeps } from "./run-setup.js";
import { runToolCall } from "./tool-calls.js";
import type { CompactionOutcome } from "./compaction/session-context.js";
import { createLiveSession, ENGINE_STATE_KEY, priceOf, settleRunContext, type ActiveRun, type LiveSession } from "./live-session.js";
import type { LlmClient } from "../llm/types.js";
import type { HookRunner } from "./hooks.js";
import { recordSessionStart, screenPrompt, stopHook } from "./session-hooks.js";
import type { RunFence } from "./cluster/fencing.js";
import type { Store } from "../store/store.js";

export type { RunObserver } from "./recorder.js";

export interface SessionManagerDeps extends RunSetupDeps {
  /** Engines by model key, first match wins (the native loop handles every key last). */
  engines: readonly Engine[];
  /** For the summarizer of compactions. */
  llm: LlmClient;
  /** Lifecycle hooks (CONTRACT §15); absent: none. */
  hooks?: HookRunner;
}


export interface CreateSessionInput {
  agent: string;
  mode?: string;
  model?: string | null;
  reasoning?: ReasoningConfig | null;
  budget_override?: Budget | null;
  parent_session_id?: string | null;
  spawn_depth?: number;
  instance_name?: string | null;
  objective?: string | null;
  success_criteria?: string | null;
}

export interface SendOptions {
  /** Per-call model; applies when this message starts a run. */
  model?: string;
  reasoning?: ReasoningConfig;
  meta?: Record<string, unknown>;
}

export interface SendReceipt {
  /** The inbox id, which becomes the stored user message id when delivered. */
  messageId: string;
  /** "started": the session was idle and a run began; "queued": injected at the next boundary of the running run. */
  delivery: "started" | "queued";
  /** Settles when the run that consumed the message ends. */
  result: Promise<RunResult>;
}

/**
 * Several nodes on one database (core/cluster): only the node holding a session's lease
 * runs it. Absent on a single node, where every session runs here.
 */
export interface RunGate {
  /** True when this node holds (or just took) the session's lease. */
  acquire(sessionId: string): Promise<boolean>;
  /**
   * The result of the run on another node that consumes `messageId`. The wait is registered
   * before this returns, so a run that ends at once is not missed.
   */
  remoteResult(sessionId: string, messageId: string): Promise<RunResult>;
  /** This node runs the message after all: drop the wait remoteResult registered. */
  forgetRemoteResult(sessionId: string, messageId: string): void;
  /** Runs `here` when this node owns the session (or may take it), else has the owner act and returns its answer. */
  control<T>(sessionId: string, action: ControlAction, here: () => Promise<T>): Promise<T>;
  /**
   * The fence a run starting now writes its session through (its lease checked in every
   * write, a signal aborted when the lease is lost); undefined when this node holds none.
   */
  openRun(sessionId: string): Promise<RunFence | undefined>;
  /** True while this node holds the session's lease (as far as it knows). */
  holds(sessionId: string): boolean;
}


/**
 * Owns sessions at run time: one run per session at a time, a durable inbox for
 * messages that arrive mid-run (drained at the next iteration boundary),
 * cancel/suspend/resume/close, and recovery after a restart.
 */
export class SessionManager {
  private readonly live = new Map<string, LiveSession>();
  private readonly observers = new Map<string, Set<RunObserver>>();
  /** Observers of every session's runs (cluster: replies for messages other nodes sent). */
  private readonly everyObservers = new Set<RunObserver>();
  private readonly closeListeners = new Set<(sessionId: string) => void | Promise<void>>();
  private readonly resumeListeners = new Set<(sessionId: string) => void | Promise<void>>();
  /** Set by shutdown(): no new run may start (e.g. a sub-agent reply arriving while runs are being stopped). */
  private stopping = false;
  private gate: RunGate | null = null;

  private readonly setup: RunSetupDeps;

  constructor(private readonly deps: SessionManagerDeps) {
    this.setup = { ...deps, toolsUpFront: (modelKey) => selectEngine(deps.engines, modelKey).toolsUpFront === true };
  }

  /** Cluster hook: runs start only on the lease holder from now on. */
  setRunGate(gate: RunGate): void {
    this.gate = gate;
  }

  async create(input: CreateSessionInput): Promise<SessionRow> {
    const agents = this.deps.agents();
    const agent = agents[input.agent];
    if (!agent) throw new VeilError("AGENT_NOT_FOUND", `no agent named "${input.agent}" (known: ${Object.keys(agents).join(", ")})`);
    const mode = input.mode ?? "chat";
    if (!agent.modes[mode] && mode !== "chat") throw new VeilError("VALIDATION_ERROR", `agent "${agent.name}" has no mode "${mode}"`);
    if (!modeConfig(agent, mode).enabled) throw new VeilError("VALIDATION_ERROR", `mode "${mode}" of agent "${agent.name}" is disabled`);
    const max = this.deps.config.settings.limits.maxLiveSessions;
    if ((await this.deps.store.countLiveSessions()) >= max) {
      throw new VeilError("BUDGET_EXCEEDED", `too many open sessions (limit ${max}, settings.limits.maxLiveSessions); close some first`);
    }
    const row: NewSession = {
      id: this.deps.ids.next("sess"),
      agent: agent.name,
      mode,
      model: input.model ?? null,
      reasoning: input.reasoning ?? null,
      budget_override: input.budget_override ?? null,
      parent_session_id: input.parent_session_id ?? null,
      spawn_depth: input.spawn_depth ?? 0,
      instance_name: input.instance_name ?? null,
      objective: input.objective ?? null,
      success_criteria: input.success_criteria ?? null,
    };
    const created = await this.deps.store.createSession(row);
    await recordSessionStart(this.deps, created.id, "startup");
    return created;
  }

  async get(id: string): Promise<SessionRow> {
    const session = await this.deps.store.getSession(id);
    if (!session) throw new VeilError("SESSION_NOT_FOUND", `no session "${id}"`);
    return session;
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
    const turn = await prepareRun(this.setup, session, {}, live.resources);
    return live.context.compactNow(turn.context, turn.rows, session.context_size);
  }

  /**
   * Accepts a user message: stored durably in the inbox before this resolves,
   * then delivered at once (idle session) or at the next boundary (running).
   * `message` is text or OpenAI content parts (stored as chat-content.ts describes).
   */
  async send(id: string, message: ChatContent, options: SendOptions = {}): Promise<SendReceipt> {
    const user = toUserMessage(message, options.meta);
    let content = user.content;
    const meta = user.meta;
    const session = await this.get(id);
    if (session.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${id}" is closed`);
    if (session.status === "suspended") throw new VeilError("SESSION_SUSPENDED", `session "${id}" is suspended; resume it first`);
    if (this.stopping) throw new VeilError("CANCELLED", "the runtime is shutting down");
    const live = this.liveFor(id);
    if (live.closing) throw new VeilError("SESSION_CLOSED", `session "${id}" is closing`);
    // Before anything is stored: a blocked prompt leaves no trace but the hook.run event.
    content = await screenPrompt(this.deps.hooks, id, content, options.meta);
    const messageId = this.deps.ids.next("msg");
    let resolve!: (r: RunResult) => void;
    const result = new Promise<RunResult>((r) => (resolve = r));
    live.pending.set(messageId, { resolve, perCall: options });
    live.inbox.arrived();
    try {
      // Cluster: the owner may be another node, which starts the run from the inbox row alone.
      const stored = this.gate ? withRunOptions(meta, options) : meta;
      await this.deps.store.addInbox({ id: messageId, session_id: id, content, meta: stored, created_at: new Date(this.deps.clock.now()).toISOString() });
    } catch (error) {
      live.pending.delete(messageId);
      throw error;
    }
    const delivery = live.run ? "queued" : "started";
    if (!live.run) {
      if (this.gate) void this.startIfOwner(id, live, messageId, options);
      else this.startRun(id, options);
    }
    return { messageId, delivery, result };
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
    await recordSessionStart(this.deps, id, "resume");
    for (const listener of this.resumeListeners) await listener(id);
    if (!live.run && (await this.deps.store.listInbox(id)).length > 0) this.startRun(id, {});
    return row;
  }

  /** Cancels the run, kills the session's resources (shells), notifies listeners (timers, methods). */
  async close(id: string): Promise<SessionRow> {
    return this.routed(id, "close", () => this.closeHere(id));
  }

  /** The owner's side of a control request another node forwarded (core/cluster/control.ts). */
  controlHere(id: string, action: ControlAction): Promise<unknown> {
    switch (action) {
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

  /** Cluster: the action runs on the session's owner. A closed session has no live state anywhere: answered here. */
  private async routed<T>(id: string, action: ControlAction, here: () => Promise<T>): Promise<T> {
    if (!this.gate) return here();
    const session = await this.get(id);
    if (session.status === "closed") return here();
    return this.gate.control(id, action, here);
  }

  private async closeHere(id: string): Promise<SessionRow> {
    const session = await this.get(id);
    if (session.status === "closed") return session;
    const live = this.liveFor(id);
    live.closing = true;
    if (live.run) {
      live.run.controller.abort(new VeilError("SESSION_CLOSED", "session closed"));
      await live.run.done;
    }
    for (const listener of this.closeListeners) {
      try {
        await listener(id);
      } catch (error) {
        this.deps.log.warn("close listener failed", { sessionId: id, error: String(error) });
      }
    }
    live.context.abandon(new VeilError("SESSION_CLOSED", `session "${id}" was closed before it could compact`));
    await live.resources.dispose();
    this.live.delete(id);
    this.deps.hooks?.endSession(id);
    return this.setStatus(id, "closed", "closed");
  }

  onClose(listener: (sessionId: string) => void | Promise<void>): () => void {
    this.closeListeners.add(listener);
    return () => void this.closeListeners.delete(listener);
  }

  onResume(listener: (sessionId: string) => void | Promise<void>): () => void {
    this.resumeListeners.add(listener);
    return () => void this.resumeListeners.delete(listener);
  }

  /** Observes the runs of one session (multi-agent delivery rules hang off this). */
  observe(sessionId: string, observer: RunObserver): () => void {
    let set = this.observers.get(sessionId);
    if (!set) this.observers.set(sessionId, (set = new Set()));
    set.add(observer);
    return () => {
      set!.delete(observer);
      if (set!.size === 0) this.observers.delete(sessionId);
    };
  }

  /** Observes the runs of every session on this node. */
  observeEvery(observer: RunObserver): () => void {
    this.everyObservers.add(observer);
    return () => void this.everyObservers.delete(observer);
  }

  /** After a restart: no run survives, dangling tool calls get placeholders. */
  async recoverRuns(): Promise<void> {
    for (const session of await this.deps.store.listSessions({ status: "running" })) {
      if (!this.gate || (await this.gate.acquire(session.id))) await this.recoverRun(session.id);
    }
  }

  /** A run cut by a crash (here or on a dead node): placeholders for its open calls, session idle. */
  async recoverRun(id: string): Promise<void> {
    const { store, ids } = this.deps;
    if (this.live.get(id)?.run) return;
    await closeDanglingToolCalls(store, id, ids);
    if ((await store.getSession(id))?.status === "running") await store.updateSession(id, { status: "idle" });
  }

  /** Starts runs for messages still waiting in the inbox (after recoverRuns; serve mode only). */
  async resumeInboxes(): Promise<void> {
    for (const id of await this.deps.store.sessionsWithInbox()) {
      if (!this.gate || (await this.gate.acquire(id))) await this.resumeInbox(id);
    }
  }

  /** Starts a run when the idle session has queued messages (cluster: the inbox signal, a takeover). */
  async resumeInbox(id: string): Promise<void> {
    // Cluster: another node queued a row; a run here reads it at its next boundary.
    this.live.get(id)?.inbox.arrived();
    if (this.stopping || this.live.get(id)?.run) return;
    const session = await this.deps.store.getSession(id);
    if (session?.status !== "idle" || this.live.get(id)?.run) return;
    const inbox = await this.deps.store.listInbox(id);
    if (inbox.length > 0 && !this.live.get(id)?.run && !this.stopping) this.startRun(id, runOptionsOf(inbox[0]!));
  }

  /**
   * Cluster: another node holds the session now. Its run here has been aborted through its
   * fence; once it has stopped, the session's tools and shells on this node are disposed
   * and messages sent here that no run consumed wait for the new owner's answer.
   */
  async leaseLost(id: string): Promise<void> {
    const live = this.live.get(id);
    if (!live) return;
    await this.waitIdle(id);
    if (this.live.get(id) !== live || live.run) return;
    this.live.delete(id);
    live.context.abandon(new VeilError("LEASE_LOST", `session "${id}" moved to another node`));
    await live.resources.dispose();
    for (const [messageId, waiter] of live.pending) void this.gate?.remoteResult(id, messageId).then(waiter.resolve);
    live.pending.clear();
    this.deps.log.warn("session moved to another node: its run, tools and shells here are stopped", { sessionId: id });
  }

  /** A run was about to start on a node that does not hold the session: the owner runs the inbox. */
  private async notOwner(id: string, live: LiveSession): Promise<RunResult> {
    this.deps.log.info("not starting a run: another node holds the session", { sessionId: id });
    for (const [messageId, waiter] of live.pending) void this.gate?.remoteResult(id, messageId).then(waiter.resolve);
    live.pending.clear();
    return { content: null, finishReason: "error", stopReason: "error", messageId: null, usage: { ...ZERO_USAGE }, iterations: 0, error: { code: "LEASE_LOST", message: `session "${id}" is held by another node` } };
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

  private async setStatus(id: string, status: SessionStatus, reason: string, store: Store = this.deps.store): Promise<SessionRow> {
    const row = await store.updateSession(id, { status });
    await this.deps.events.publish(id, { type: "session.state", status, reason });
    return row;
  }

  /** Cluster: the lease holder runs the message; another node waits for the owner's result. */
  private async startIfOwner(id: string, live: LiveSession, messageId: string, perCall: SendOptions): Promise<void> {
    const gate = this.gate!;
    // Waiting first: the owner may run the message and end before acquire() answers here.
    const remote = gate.remoteResult(id, messageId);
    try {
      if (await gate.acquire(id)) {
        gate.forgetRemoteResult(id, messageId);
        if (!live.run && !this.stopping) this.startRun(id, perCall);
        return;
      }
      const result = await remote;
      live.pending.get(messageId)?.resolve(result);
      live.pending.delete(messageId);
    } catch (error) {
      this.deps.log.warn("message could not be handed to the session's owner", { sessionId: id, error: String(error) });
    }
  }

  /** Starts a run synchronously-registered, so a concurrent send sees it and queues. */
  private startRun(id: string, perCall: SendOptions): void {
    const live = this.liveFor(id);
    const controller = new AbortController();
    // Every parallel tool call listens on the run's signal; many calls are legitimate.
    setMaxListeners(0, controller.signal);
    const run: ActiveRun = { controller, stopRequest: null, done: undefined as unknown as Promise<RunResult> };
    live.run = run;
    run.done = this.executeRun(id, live, run, perCall).finally(() => {
      if (live.run === run) live.run = null;
    });
    void run.done.then(() => this.startQueued(id, live));
  }

  /** A message that arrived after the run's last boundary starts the next run. */
  private async startQueued(id: string, live: LiveSession): Promise<void> {
    if (this.stopping || live.closing || live.run) return;
    // Cluster: a session this node lost (or never held) is run by its owner.
    if (this.gate && !this.gate.holds(id)) return;
    try {
      const session = await this.deps.store.getSession(id);
      if (session?.status !== "idle") return;
      const inbox = await this.deps.store.listInbox(id);
      if (inbox.length > 0 && !live.run && !this.stopping) this.startRun(id, {});
    } catch (error) {
      // The runtime may be closing its store meanwhile: the queued message stays durable for the next start.
      this.deps.log.warn("could not check for queued messages after a run", { sessionId: id, error: String(error) });
    }
  }

  private async executeRun(id: string, live: LiveSession, run: ActiveRun, perCall: SendOptions): Promise<RunResult> {
    const { clock, ids, log, events } = this.deps;
    // Cluster: the run writes its session through its lease's fence, and stops when the lease is lost.
    const fence = this.gate ? await this.gate.openRun(id) : undefined;
    if (this.gate && !fence) return this.notOwner(id, live);
    fence?.signal.addEventListener("abort", () => run.controller.abort(fence.signal.reason), { once: true });
    const store = fence?.store ?? this.deps.store;
    let modelKey: string | undefined;
    const recorder = new RunRecorder({
      sessionId: id,
      store,
      events,
      ids,
      observers: () => (this.everyObservers.size > 0 ? [...(this.observers.get(id) ?? []), ...this.everyObservers] : [...(this.observers.get(id) ?? [])]),
      costOf: (usage, model) => priceOf(this.deps.config.models, usage, model ?? modelKey ?? ""),
      context: live.context,
    });
    live.recorder = recorder;
    // A new run (a takeover, a restart) reads the inbox at its first boundary whatever was seen.
    live.inbox.arrived();
    let result: RunResult;
    try {
      await live.context.quiet();
      const session = await this.get(id);
      const turn = await prepareRun(this.setup, session, perCall, live.resources);
      modelKey = turn.modelKey;
      await this.setStatus(id, "running", "run started", store);
      const signal = run.controller.signal;
      live.context.begin({ ...turn.context, signal }, turn.rows, session.context_size);
      const executor = { toolset: turn.toolset, clock, log, recorder, signal, makeContext: turn.makeContext, hooks: this.deps.hooks, sessionId: id };
      const io: RunIO = {
        executeTool: (call) => runToolCall(call, executor),
        nextInputs: async () => rowsToMessages(await this.drain(id, live, recorder, store)),
        hasPendingInput: () => live.pending.size > 0,
        stopRequested: () => run.stopRequest,
        saveEngineState: (state) => store.setSessionMeta(id, ENGINE_STATE_KEY, state),
        modelContext: () => live.context.modelContext(),
        modelCallFailed: (error, retried) => live.context.modelCallFailed(error, retried),
        runEnding: stopHook({ hooks: this.deps.hooks, store, ids, now: () => clock.now(), queued: () => live.inbox.arrived() }, id),
        clock,
        log,
      };
      const engine = selectEngine(this.deps.engines, turn.modelKey);
      const stream = engine.run(
        {
          sessionId: id,
          modelKey: turn.modelKey,
          reasoning: turn.reasoning,
          systemPrompt: turn.systemPrompt,
          history: turn.history,
          toolset: turn.toolset,
          usageBefore: session.token_usage ?? ZERO_USAGE,
          maxOutputTokens: turn.model.max_output_tokens,
          compactThreshold: turn.context.settings.autoThreshold,
          budget: turn.budget,
          signal,
          engineState: (await store.getSessionMeta<Record<string, unknown>>(id, ENGINE_STATE_KEY)) ?? null,
        },
        io,
      );
      for await (const event of stream) await recorder.apply(event);
      result = recorder.result();
    } catch (error) {
      const code = error instanceof VeilError ? error.code : "INTERNAL_ERROR";
      if (!(error instanceof VeilError)) log.error("run failed", { sessionId: id, error: String(error), stack: (error as Error)?.stack });
      result = { ...recorder.result(), finishReason: "error", stopReason: "error", error: { code, message: (error as Error).message } };
    }
    if (fence?.lost) {
      const reason = fence.signal.reason as Error;
      result = { ...recorder.result(), finishReason: "error", stopReason: "error", error: { code: "LEASE_LOST", message: reason.message } };
    }
    this.deps.hooks?.runEnded(id);
    // A failed run answers every message waiting for it with its error; leaving them in the
    // inbox would restart a run that fails the same way, over and over. (A run cut by a lost
    // lease leaves them to the new owner.)
    if (result.stopReason === "error" && !fence?.lost) await this.drain(id, live, recorder, store).catch(() => []);
    await settleRunContext(id, live, recorder, log);
    // The summarizer's spend of that compaction is the turn's too.
    const spent = recorder.result().costUsd;
    if (spent !== undefined) result = { ...result, costUsd: spent };
    await this.finishRun(id, live, run, result, store, fence);
    return result;
  }

  private async finishRun(id: string, live: LiveSession, run: ActiveRun, result: RunResult, store: Store, fence: RunFence | undefined): Promise<void> {
    const { events, log } = this.deps;
    fence?.close();
    if (fence?.lost) {
      // The session is another node's now: nothing more is written here, the waiters get the error.
      for (const observer of this.observers.get(id) ?? []) observer.onRunEnd?.(result);
      for (const resolve of live.consumed.splice(0)) resolve(result);
      return;
    }
    try {
      const session = await store.getSession(id);
      if (session && session.status === "running") await this.setStatus(id, "idle", result.stopReason, store);
    } catch (error) {
      log.warn("could not set session idle", { sessionId: id, error: String(error) });
    }
    if (run.controller.signal.aborted) await closeDanglingToolCalls(store, id, this.deps.ids).catch(() => 0);
    await events.publish(id, {
      type: "chat.done",
      content: result.content,
      finishReason: result.finishReason,
      stopReason: result.stopReason,
      tokenUsage: result.usage,
      messageId: result.messageId,
      ...(result.costUsd !== undefined ? { cost_usd: result.costUsd } : {}),
      ...(result.error ? { error: result.error } : {}),
    });
    for (const observer of this.observers.get(id) ?? []) observer.onRunEnd?.(result);
    const waiters = live.consumed.splice(0);
    for (const resolve of waiters) resolve(result);
  }

  /** Moves this session's inbox into the history, in arrival order, exactly once. */
  private async drain(id: string, live: LiveSession, recorder: RunRecorder, store: Store): Promise<MessageRow[]> {
    if (!live.inbox.mustRead(live.pending.size)) return [];
    const items = await store.listInbox(id);
    if (items.length === 0) return [];
    const rows = await store.deliverInbox(
      id,
      items.map((item) => ({ inboxId: item.id, message: { id: item.id, session_id: id, role: "user", content: item.content, meta: withoutRunOptions(item.meta) } })),
    );
    for (const row of rows) {
      const waiter = live.pending.get(row.id);
      if (waiter) {
        live.pending.delete(row.id);
        live.consumed.push(waiter.resolve);
        // Sent here while another node held the session, run here after a takeover.
        this.gate?.forgetRemoteResult(id, row.id);
      }
    }
    await recorder.drained(rows);
    return rows;
  }
}
