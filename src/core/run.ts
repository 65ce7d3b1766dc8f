import { fairTurn } from "../base/fair-turns.js";
import { VeilError } from "../errors.js";
import type { RegisteredTool } from "../tools/types.js";
import type { RunEvent, RunIO, RunResult } from "../engines/types.js";
import { selectEngine } from "../engines/select.js";
import type { SessionRow } from "../store/store.js";
import { ZERO_USAGE } from "../store/store.js";
import { RunRecorder, type RunObserver } from "./recorder.js";
import { prepareRun, type PreparedRun, type RunSetupDeps } from "./run-setup.js";
import { toolCallEvents } from "./tool-calls.js";
import { SessionWriter } from "./session-writer.js";
import { TurnCheckpoints } from "./checkpoints/turn-checkpoints.js";
import { ENGINE_STATE_KEY, runPricer, settleRunContext, type ActiveRun, type LiveSession } from "./live-session.js";
import { stopHook } from "./session-hooks.js";
import { notHeldResult, type RunFence, type SessionPlacement } from "./placement.js";
import type { SendOptions, SessionManagerDeps } from "./session-types.js";
import type { TurnParent, TurnTelemetry } from "./telemetry/types.js";

/** The inbox side of a run, kept by the SessionManager (it owns the drain). */
export interface RunInbox {
  nextInputs: RunIO["nextInputs"];
  hasPendingInput: RunIO["hasPendingInput"];
  /** A failed run answers every message still waiting for it with its error. */
  drainRest(): Promise<unknown>;
}

/** What one run needs of the SessionManager that starts it. */
export interface RunHost {
  deps: Omit<SessionManagerDeps, "services">;
  setup: RunSetupDeps;
  /** Where the session runs and what the run writes through. */
  placement: SessionPlacement;
  /** Observers the recorder calls (this session's and every session's). */
  recorderObservers(id: string): RunObserver[];
  /** This session's observers, told when the run ends. */
  sessionObservers(id: string): Iterable<RunObserver>;
  getSession(id: string): Promise<SessionRow>;
  inbox(id: string, live: LiveSession, recorder: RunRecorder): RunInbox;
}

/** One run of a session, from its fence to chat.done; never throws. */
export async function executeRun(host: RunHost, id: string, live: LiveSession, run: ActiveRun, perCall: SendOptions): Promise<RunResult> {
  const { log } = host.deps;
  // The run writes its session through its fence, and stops when the session is lost to another writer.
  const fence = await host.placement.openRun(id, live);
  if (!fence) return notHeldResult(id);
  fence.signal.addEventListener("abort", () => run.controller.abort(fence.signal.reason), { once: true });
  // Every write of the run goes through its recorder and this writer, over the fenced store.
  const writer = new SessionWriter({ sessionId: id, store: fence.store, events: host.deps.events, ids: host.deps.ids, now: () => host.deps.clock.now() });
  // What hooks and remote methods publish for the session while it runs goes through this writer too.
  const letGo = host.deps.runWriters?.hold(writer);
  let modelKey: string | undefined;
  const price = runPricer(host.deps.config.models);
  const checkpoints = host.deps.checkpoints ? new TurnCheckpoints({ tracker: host.deps.checkpoints, store: writer.store, sessionId: id, ids: host.deps.ids, log }) : undefined;
  const recorder = new RunRecorder({
    writer,
    observers: () => host.recorderObservers(id),
    costOf: (usage, model) => price(usage, model ?? modelKey ?? ""),
    context: live.context,
    ...(checkpoints ? { checkpoints } : {}),
  });
  // A new run (a takeover, a restart) reads the inbox at its first boundary whatever was seen.
  live.inbox.changed();
  const inbox = host.inbox(id, live, recorder);
  const telemetry = host.deps.telemetry?.turnStarted({ sessionId: id, parent: turnParent(perCall), costOf: (usage, model) => price(usage, model ?? modelKey ?? "") });
  let result: RunResult;
  try {
    // Many runs starting at once take turns with the sockets (see fair-turns.ts).
    await fairTurn();
    await live.context.quiet();
    // This read is the budget's first: a change that lands during it is read before the next model call.
    live.budget.mustRead(true);
    const session = await host.getSession(id);
    const turn = await prepareRun(host.setup, session, perCall, live.resources, writer, live.budget);
    modelKey = turn.modelKey;
    if (turn.agent.checkpoints?.enabled === false) checkpoints?.disable();
    await recorder.started();
    const owner = session.owner_key;
    const keyBudgetSpent = host.deps.keyBudgetSpent;
    const overBudget = owner && keyBudgetSpent ? () => keyBudgetSpent(owner) : null;
    await streamEngine(host, { id, live, run, recorder, inbox, overBudget, telemetry }, session, turn);
    result = recorder.result();
  } catch (error) {
    const code = error instanceof VeilError ? error.code : "INTERNAL_ERROR";
    if (!(error instanceof VeilError)) log.error("run failed", { sessionId: id, error: String(error), stack: (error as Error)?.stack });
    result = { ...recorder.result(), finishReason: "error", stopReason: "error", error: { code, message: (error as Error).message } };
  }
  if (fence.lost) {
    const reason = fence.signal.reason as Error;
    result = { ...recorder.result(), finishReason: "error", stopReason: "error", error: { code: "LEASE_LOST", message: reason.message } };
  }
  host.deps.hooks?.runEnded(id);
  // A failed run answers every message waiting for it with its error; leaving them in the
  // inbox would restart a run that fails the same way, over and over. (A run cut by a lost
  // lease leaves them to the new owner.)
  if (result.stopReason === "error" && !fence.lost) await inbox.drainRest().catch(() => []);
  await settleRunContext(id, live, recorder, log);
  // The summarizer's spend of that compaction is the turn's too.
  const spent = recorder.result().costUsd;
  if (spent !== undefined) result = { ...result, costUsd: spent };
  telemetry?.ended(result);
  try {
    await finishRun(host, id, live, run, result, recorder, fence);
  } finally {
    letGo?.();
  }
  return result;
}

/** Where the turn's trace hangs: the caller's traceparent, else the sub-agent call that sent the message. */
export function turnParent(perCall: SendOptions): TurnParent | null {
  if (perCall.traceparent) return { traceparent: perCall.traceparent };
  const from = perCall.meta?.fromSessionId;
  if (typeof from !== "string") return null;
  const call = perCall.meta?.fromToolCallId;
  return { sessionId: from, ...(typeof call === "string" ? { toolCallId: call } : {}) };
}

const TOOL_EVENTS: ReadonlySet<RunEvent["type"]> = new Set(["tool_started", "tool_state", "tool_progress", "tool_finished"]);

interface RunScope {
  id: string;
  /** Whether the owner key's budget is spent (checked at the start and after every step); null: no key budget applies. */
  overBudget?: (() => Promise<boolean>) | null;
  live: LiveSession;
  run: ActiveRun;
  recorder: RunRecorder;
  inbox: RunInbox;
  telemetry: TurnTelemetry | undefined;
}

/** Runs the session's engine over the prepared turn, every event through the recorder. */
async function streamEngine(host: RunHost, scope: RunScope, session: SessionRow, turn: PreparedRun): Promise<void> {
  const { id, live, run, recorder } = scope;
  const signal = run.controller.signal;
  live.context.begin({ ...turn.context, signal }, turn.rows, session.context_size, recorder.contextWriter());
  const engine = selectEngine(host.deps.engines, turn.modelKey);
  scope.telemetry?.prepared({ agent: session.agent, modelKey: turn.modelKey, engine: engine.name });
  const stream = engine.run(
    {
      sessionId: id,
      modelKey: turn.modelKey,
      reasoning: turn.reasoning,
      systemPrompt: turn.systemPrompt,
      ...(turn.sessionBrief ? { sessionBrief: turn.sessionBrief } : {}),
      history: turn.history,
      toolset: turn.toolset,
      usageBefore: session.token_usage ?? ZERO_USAGE,
      maxOutputTokens: turn.model.max_output_tokens,
      compactThreshold: turn.context.settings.autoThreshold,
      budget: turn.budget,
      signal,
      engineState: (await host.deps.store.getSessionMeta<Record<string, unknown>>(id, ENGINE_STATE_KEY)) ?? null,
      ...(turn.outputSchema ? { outputSchema: turn.outputSchema } : {}),
    },
    runIO(host, scope, turn),
  );
  // A key whose budget is spent stops its runs at the next boundary (the engine asks before every model call).
  const checkBudget = async () => {
    if (scope.overBudget && run.stopRequest === null && (await scope.overBudget())) run.stopRequest = "budget";
  };
  await checkBudget();
  for await (const event of stream) {
    // Runs take turns between steps; a tool call's own events are one step's, and go on at once.
    if (!TOOL_EVENTS.has(event.type)) await fairTurn();
    scope.telemetry?.event(event);
    await scope.recorder.apply(event);
    if (event.type === "assistant_message" && !event.final) await checkBudget();
  }
}

/** How the engine reaches tools, the inbox, the store and the session's context during the run. */
function runIO(host: RunHost, { id, live, run, recorder, inbox }: RunScope, turn: PreparedRun): RunIO {
  const { clock, log, hooks } = host.deps;
  const signal = run.controller.signal;
  const executor = {
    toolset: turn.toolset,
    clock,
    log,
    signal,
    makeContext: turn.makeContext,
    hooks,
    sessionId: id,
    ...(turn.annotate ? { annotate: turn.annotate } : {}),
    ...(turn.approvals ? { approvals: turn.approvals } : {}),
    // A tool that may change files runs once the checkpoint baseline holds them.
    beforeRun: (tool: RegisteredTool) => (tool.readOnly ? undefined : recorder.baselineHeld()),
  };
  return {
    executeTool: (call) => toolCallEvents(call, executor),
    nextInputs: inbox.nextInputs,
    hasPendingInput: inbox.hasPendingInput,
    stopRequested: () => run.stopRequest,
    saveEngineState: (state) => recorder.saveEngineState(state),
    modelContext: () => live.context.modelContext(),
    modelCallFailed: (error, retried) => live.context.modelCallFailed(error, retried),
    runEnding: stopHook(hooks, id, recorder, () => live.inbox.changed()),
    clock,
    log,
  };
}

/** The session back to idle, chat.done published, and every waiter of the run answered. */
async function finishRun(host: RunHost, id: string, live: LiveSession, run: ActiveRun, result: RunResult, recorder: RunRecorder, fence: RunFence): Promise<void> {
  if (fence.lost) {
    // The session is another node's now: nothing more is written here, the waiters get the error.
    fence.close();
    for (const observer of host.sessionObservers(id)) observer.onRunEnd?.(result, recorder.writes);
    for (const resolve of live.consumed.splice(0)) resolve(result);
    return;
  }
  // Still under the fence: the run's last writes (status, placeholders, chat.done) check its lease too.
  await recorder.finished(result, { cut: run.controller.signal.aborted, log: host.deps.log });
  fence.close();
  for (const observer of host.sessionObservers(id)) observer.onRunEnd?.(result, recorder.writes);
  const waiters = live.consumed.splice(0);
  for (const resolve of waiters) resolve(result);
}
