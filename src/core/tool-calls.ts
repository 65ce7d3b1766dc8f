import type { Clock } from "../base/clock.js";
import type { Logger } from "../base/log.js";
import { errorMessage, isVeilError } from "../errors.js";
import type { RunEvent, ToolCallResult } from "../engines/types.js";
import { parseToolArguments, type ParsedToolArguments } from "../llm/tool-arguments.js";
import type { ToolCallRequest } from "../llm/types.js";
import { formatThrown, formatToolError } from "../tools/format.js";
import { normaliseOutcome } from "../tools/outcome.js";
import type { SessionToolset } from "../tools/registry.js";
import type { RegisteredTool, ToolContext, ToolOutcome } from "../tools/types.js";
import { systemReminder } from "../tools/format.js";
import type { HookRunner } from "./hooks.js";
import type { ApprovalGate } from "./approvals.js";

/** A tool running past this gets a `tool.progress` at least this often. */
export const PROGRESS_INTERVAL_MS = 5000;

export interface ToolExecutorDeps {
  toolset: SessionToolset;
  clock: Clock;
  log: Logger;
  /** The run's signal: cancel, suspend-now and close abort it. */
  signal: AbortSignal;
  /** Builds the context for one call; the signal is the run's (plus the tool's timeout). */
  makeContext(call: ToolCallRequest, signal: AbortSignal): ToolContext;
  /** PreToolUse / PostToolUse; absent or without such hooks: no cost. */
  hooks?: HookRunner;
  sessionId?: string;
  /** Adds to a finished call's result what its tool's reach calls for (a folder's AGENTS.md). */
  annotate?(tool: RegisteredTool, input: Record<string, unknown>, outcome: ToolOutcome): Promise<ToolOutcome>;
  /** Calls that wait for a person's approval (settings and agent.json `approval`); absent: none. */
  approvals?: ApprovalGate;
  /** What a call must wait for before its tool runs (the checkpoint baseline, for a tool that may change files); undefined: nothing. */
  beforeRun?(tool: RegisteredTool): Promise<void> | undefined;
}

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/**
 * Runs one tool call through its persisted states, reported as the run's events:
 * tool_started, tool_state (validating, executing), tool_progress while it runs, and always
 * last tool_finished (done | error | cancelled). The consumer (the engine, then the
 * recorder) sends a state's write before asking for the next event and orders every later
 * write after it, so the terminal state always lands last; the call may start while its
 * "executing" write is in flight (recovery closes pending, validating and executing calls
 * alike, and a write refused for a lost lease aborts the call). Never throws.
 * "validating" is reported only when a PreToolUse hook is awaited between the checks and the
 * run; without one the checks are synchronous, so the first stored state is "executing"
 * (or the result's): one write less per call, and recovery treats pending and validating alike.
 */
export async function* toolCallEvents(call: ToolCallRequest, deps: ToolExecutorDeps): AsyncGenerator<RunEvent, void> {
  const { signal } = deps;
  const started = deps.clock.monotonic();
  const finished = (state: ToolCallResult["state"], outcome: ToolOutcome, input: unknown): RunEvent => ({
    type: "tool_finished",
    input,
    result: {
      call,
      output: outcome.output,
      attachments: outcome.attachments,
      details: outcome.details ?? null,
      success: state === "done" && !outcome.isError,
      state,
      durationMs: Math.round(deps.clock.monotonic() - started),
    },
  });

  const parsed = parseArguments(call.arguments);
  const input = parsed.ok ? parsed.value : call.arguments;
  yield { type: "tool_started", call, input };
  if (!parsed.ok) return yield finished("error", { output: invalidArgumentsText(call.arguments, parsed.problem) }, input);
  const resolution = deps.toolset.resolve(call.name);
  if (!resolution.ok) return yield finished("error", { output: formatToolError(resolution.code, resolution.message) }, input);
  const tool = resolution.tool;
  const problem = tool.validate(parsed.value);
  if (problem) return yield finished("error", { output: formatToolError("VALIDATION_ERROR", problem) }, input);
  if (signal.aborted) return yield finished("cancelled", { output: cancelledText() }, input);
  const hooks = deps.hooks;
  // The settings files are looked at once per call; the call's later checks use what this read.
  const preHooked = hooks?.has("PreToolUse") ?? false;
  if (hooks && preHooked) {
    yield { type: "tool_state", callId: call.id, state: "validating" };
    // A blocked call never runs: the hook's reason (its stderr) is the result the model sees.
    const decision = await hooks.preToolUse({ sessionId: deps.sessionId ?? "", toolName: call.name, toolInput: parsed.value });
    if (decision.blocked) return yield finished("error", { output: decision.reason }, input);
    if (signal.aborted) return yield finished("cancelled", { output: cancelledText() }, input);
  }
  if (deps.approvals?.needed(call.name)) {
    if (!preHooked) yield { type: "tool_state", callId: call.id, state: "validating" };
    // Asked after every check, so a person approves exactly the call that will run.
    const verdict = await deps.approvals.ask({ toolName: call.name, toolInput: parsed.value, toolCallId: call.id }, signal);
    if (!verdict.approved) return yield finished(signal.aborted ? "cancelled" : "error", { output: formatToolError("DENIED", verdict.reason) }, input);
  }

  const gate = deps.beforeRun?.(tool);
  if (gate) {
    await gate;
    if (signal.aborted) return yield finished("cancelled", { output: cancelledText() }, input);
  }
  yield { type: "tool_state", callId: call.id, state: "executing" };
  // Checked again after the state was sent: a cancel that landed meanwhile must still stop the call.
  if (signal.aborted) return yield finished("cancelled", { output: cancelledText() }, input);
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  let cancelTimer: (() => void) | undefined;
  if (tool.timeoutMs) cancelTimer = deps.clock.setTimer(tool.timeoutMs, () => controller.abort(new ToolTimeout(tool.timeoutMs!)));
  try {
    const work = settle(raceAbort(tool.execute(parsed.value, deps.makeContext(call, controller.signal)), controller.signal));
    let settled: Settled<ToolOutcome | string>;
    // tool.progress every PROGRESS_INTERVAL_MS while the call runs.
    for (;;) {
      const tick = timer(deps.clock, PROGRESS_INTERVAL_MS);
      const next = await Promise.race([work, tick.fired]);
      tick.cancel();
      if (next !== TICK) {
        settled = next;
        break;
      }
      yield { type: "tool_progress", callId: call.id, name: call.name, elapsedMs: deps.clock.monotonic() - started };
    }
    if (settled.ok) {
      let outcome = normaliseOutcome(settled.value);
      if (deps.annotate) outcome = await deps.annotate(tool, parsed.value, outcome);
      if (hooks?.has("PostToolUse", { reread: false })) outcome = await afterTool(hooks, deps.sessionId ?? "", call.name, parsed.value, outcome);
      return yield finished(outcome.isError ? "error" : "done", outcome, input);
    }
    const error = settled.error;
    if (controller.signal.reason instanceof ToolTimeout) {
      return yield finished("error", { output: formatToolError("TOOL_TIMEOUT", `tool "${call.name}" did not finish within ${tool.timeoutMs} ms and was stopped`) }, input);
    }
    if (signal.aborted) return yield finished("cancelled", { output: cancelledText() }, input);
    if (!isVeilError(error)) deps.log.error(`tool ${call.name} threw`, { error: errorMessage(error), stack: (error as Error)?.stack });
    return yield finished("error", { output: formatThrown(error).text }, input);
  } finally {
    cancelTimer?.();
    signal.removeEventListener("abort", onAbort);
  }
}

/** PostToolUse: the tool already ran; a blocking hook's reason is appended for the model. */
async function afterTool(hooks: HookRunner, sessionId: string, toolName: string, toolInput: unknown, outcome: ToolOutcome): Promise<ToolOutcome> {
  const decision = await hooks.postToolUse({ sessionId, toolName, toolInput, toolResponse: { output: outcome.output, is_error: Boolean(outcome.isError) } });
  if (!decision.blocked) return outcome;
  return { ...outcome, output: `${outcome.output}\n\n${systemReminder(`PostToolUse hook: ${decision.reason}`)}` };
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

function settle<T>(work: Promise<T>): Promise<Settled<T>> {
  return work.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

const TICK = Symbol("tick");

/** A one-shot timer on the run's clock, as a promise. */
function timer(clock: Clock, ms: number): { fired: Promise<typeof TICK>; cancel(): void } {
  let cancel: () => void = () => {};
  const fired = new Promise<typeof TICK>((resolve) => (cancel = clock.setTimer(ms, () => resolve(TICK))));
  return { fired, cancel };
}

export function cancelledText(): string {
  return formatToolError("CANCELLED", "the run was cancelled before this tool call finished");
}

class ToolTimeout extends Error {
  constructor(readonly ms: number) {
    super(`tool timed out after ${ms} ms`);
  }
}

/** A tool that ignores its signal still frees the loop: give it a short grace, then move on. */
const ABORT_GRACE_MS = 2000;

function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    let grace: NodeJS.Timeout | undefined;
    const onAbort = () => {
      grace = setTimeout(() => reject(signal.reason), ABORT_GRACE_MS);
      grace.unref?.();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        clearTimeout(grace);
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error) => {
        clearTimeout(grace);
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function parseArguments(text: string): ParsedToolArguments {
  const parsed = parseToolArguments(text);
  return parsed.ok ? { ok: true, value: stripForbidden(parsed.value) } : parsed;
}

/** How much of malformed arguments the error quotes back. */
const QUOTED_ARGUMENTS_CHARS = 200;

/**
 * The result of a call whose arguments are not a JSON object. Later requests carry `{}` in
 * their place (a strict provider refuses the raw text), so the result quotes the start of it.
 */
function invalidArgumentsText(raw: string, problem: string): string {
  const quoted = raw.length > QUOTED_ARGUMENTS_CHARS ? `${raw.slice(0, QUOTED_ARGUMENTS_CHARS)}…` : raw;
  return formatToolError(
    "VALIDATION_ERROR",
    `arguments are ${problem}, so the call was not run; the conversation shows them as {}. You sent: ${quoted}\nSend one JSON object matching the tool's schema.`,
  );
}

/** Prototype keys never reach a tool. */
function stripForbidden(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) if (!FORBIDDEN_KEYS.has(key)) out[key] = v;
  return out;
}
