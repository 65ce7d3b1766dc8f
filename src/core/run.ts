import { fairTurn } from "../base/fair-turns.js";
import { VeilError } from "../errors.js";
import type { RunIO, RunResult } from "../engines/types.js";
import { selectEngine } from "../engines/select.js";
import type { SessionRow, SessionStatus, Store } from "../store/store.js";
import { ZERO_USAGE } from "../store/store.js";
import { closeDanglingToolCalls } from "./history.js";
import { RunRecorder, type RunObserver } from "./recorder.js";
import { prepareRun, type PreparedRun, type RunSetupDeps } from "./run-setup.js";
import { runToolCall } from "./tool-calls.js";
import { ENGINE_STATE_KEY, priceOf, settleRunContext, type ActiveRun, type LiveSession } from "./live-session.js";
import { stopHook } from "./session-hooks.js";
import type { RunFence } from "./cluster/fencing.js";
import { notOwnerResult, type RunGate } from "./cluster/run-gate.js";
import type { SendOptions, SessionManagerDeps } from "./session-types.js";

/** The inbox side of a run, kept by the SessionManager (it owns the drain). */
export interface RunInbox {
  nextInputs: RunIO["nextInputs"];
  hasPendingInput: RunIO["hasPendingInput"];
  /** A failed run answers every message still waiting for it with its error. */
  drainRest(): Promise<unknown>;
}

/** What one run needs of the SessionManager that starts it. */
export interface RunHost {
  deps: SessionManagerDeps;
  setup: RunSetupDeps;
  /** The cluster's run gate, once set (null on a single node). */
  gate(): RunGate | null;
  /** Observers the recorder calls (this session's and every session's). */
  recorderObservers(id: string): RunObserver[];
  /** This session's observers, told when the run ends. */
  sessionObservers(id: string): Iterable<RunObserver>;
  getSession(id: string): Promise<SessionRow>;
  setStatus(id: string, status: SessionStatus, reason: string, store: Store): Promise<SessionRow>;
  /** A run was about to start on a node that does not hold the session. */
  notOwner(id: string, live: LiveSession): void;
  inbox(id: string, live: LiveSession, recorder: RunRecorder, store: Store): RunInbox;
}

/** One run of a session, from its fence to chat.done; never throws. */
export async function executeRun(host: RunHost, id: string, live: LiveSession, run: ActiveRun, perCall: SendOptions): Promise<RunResult> {
  const { log } = host.deps;
  // Cluster: the run writes its session through its lease's fence, and stops when the lease is lost.
  const gate = host.gate();
  const fence = gate ? await gate.openRun(id) : undefined;
  if (gate && !fence) {
    host.notOwner(id, live);
    return notOwnerResult(id);
  }
  fence?.signal.addEventListener("abort", () => run.controller.abort(fence.signal.reason), { once: true });
  const store = fence?.store ?? host.deps.store;
  let modelKey: string | undefined;
  const recorder = new RunRecorder({
    sessionId: id,
    store,
    events: host.deps.events,
    ids: host.deps.ids,
    observers: () => host.recorderObservers(id),
    costOf: (usage, model) => priceOf(host.deps.config.models, usage, model ?? modelKey ?? ""),
    context: live.context,
  });
  live.recorder = recorder;
  // A new run (a takeover, a restart) reads the inbox at its first boundary whatever was seen.
  live.inbox.arrived();
  const inbox = host.inbox(id, live, recorder, store);
  let result: RunResult;
  try {
    // Many runs starting at once take turns with the sockets (see fair-turns.ts).
    await fairTurn();
    await live.context.quiet();
    const session = await host.getSession(id);
    const turn = await prepareRun(host.setup, session, perCall, live.resources);
    modelKey = turn.modelKey;
    await host.setStatus(id, "running", "run started", store);
    await streamEngine(host, { id, live, run, recorder, store, inbox }, session, turn);
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
  host.deps.hooks?.runEnded(id);
  // A failed run answers every message waiting for it with its error; leaving them in the
  // inbox would restart a run that fails the same way, over and over. (A run cut by a lost
  // lease leaves them to the new owner.)
  if (result.stopReason === "error" && !fence?.lost) await inbox.drainRest().catch(() => []);
  await settleRunContext(id, live, recorder, log);
  // The summarizer's spend of that compaction is the turn's too.
  const spent = recorder.result().costUsd;
  if (spent !== undefined) result = { ...result, costUsd: spent };
  await finishRun(host, id, live, run, result, store, fence);
  return result;
}

interface RunScope {
  id: string;
  live: LiveSession;
  run: ActiveRun;
  recorder: RunRecorder;
  store: Store;
  inbox: RunInbox;
}

/** Runs the session's engine over the prepared turn, every event through the recorder. */
async function streamEngine(host: RunHost, scope: RunScope, session: SessionRow, turn: PreparedRun): Promise<void> {
  const { id, live, run, store } = scope;
  const signal = run.controller.signal;
  live.context.begin({ ...turn.context, signal }, turn.rows, session.context_size);
  const engine = selectEngine(host.deps.engines, turn.modelKey);
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
    runIO(host, scope, turn),
  );
  for await (const event of stream) {
    await fairTurn();
    await scope.recorder.apply(event);
  }
}

/** How the engine reaches tools, the inbox, the store and the session's context during the run. */
function runIO(host: RunHost, { id, live, run, recorder, store, inbox }: RunScope, turn: PreparedRun): RunIO {
  const { clock, ids, log, hooks } = host.deps;
  const signal = run.controller.signal;
  const executor = { toolset: turn.toolset, clock, log, recorder, signal, makeContext: turn.makeContext, hooks, sessionId: id, ...(turn.annotate ? { annotate: turn.annotate } : {}) };
  return {
    executeTool: (call) => runToolCall(call, executor),
    nextInputs: inbox.nextInputs,
    hasPendingInput: inbox.hasPendingInput,
    stopRequested: () => run.stopRequest,
    saveEngineState: (state) => store.setSessionMeta(id, ENGINE_STATE_KEY, state),
    modelContext: () => live.context.modelContext(),
    modelCallFailed: (error, retried) => live.context.modelCallFailed(error, retried),
    runEnding: stopHook({ hooks, store, ids, now: () => clock.now(), queued: () => live.inbox.arrived() }, id),
    clock,
    log,
  };
}

/** The session back to idle, chat.done published, and every waiter of the run answered. */
async function finishRun(host: RunHost, id: string, live: LiveSession, run: ActiveRun, result: RunResult, store: Store, fence: RunFence | undefined): Promise<void> {
  const { events, log } = host.deps;
  fence?.close();
  if (fence?.lost) {
    // The session is another node's now: nothing more is written here, the waiters get the error.
    for (const observer of host.sessionObservers(id)) observer.onRunEnd?.(result);
    for (const resolve of live.consumed.splice(0)) resolve(result);
    return;
  }
  try {
    const session = await store.getSession(id);
    if (session && session.status === "running") await host.setStatus(id, "idle", result.stopReason, store);
  } catch (error) {
    log.warn("could not set session idle", { sessionId: id, error: String(error) });
  }
  if (run.controller.signal.aborted) await closeDanglingToolCalls(store, id, host.deps.ids).catch(() => 0);
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
  for (const observer of host.sessionObservers(id)) observer.onRunEnd?.(result);
  const waiters = live.consumed.splice(0);
  for (const resolve of waiters) resolve(result);
}
