import { spawn } from "node:child_process";
import type { Clock } from "../base/clock.js";
import type { VeilEventBody } from "../base/events.js";
import type { Logger } from "../base/log.js";
import type { HooksReader } from "../config/hooks-file.js";
import type { HookCommand, HookEventName, HooksSettings } from "../config/types.js";
import { errorMessage, isVeilError, VeilError } from "../errors.js";
import { formatToolError } from "../tools/format.js";

/** A hook past its timeout is killed and counts as exit 0. */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 60;
/** Stop hooks may continue a run at most this many times in a row. */
export const MAX_STOP_CONTINUATIONS = 3;
/** Output kept per stream of one hook run. */
const MAX_OUTPUT_BYTES = 1024 * 1024;
/** After the shell exits, how long its stdout may stay open (a backgrounded child holding it) before we stop reading. */
const STDIO_GRACE_MS = 100;
const BLOCKING_EXIT_CODE = 2;

export type HookDecision = { blocked: false; context?: string } | { blocked: true; reason: string };

export interface HookRunnerOptions {
  hooks: HooksSettings | undefined;
  /**
   * Asked before each hook decision for the hooks now in force (config/hooks-file.ts: the
   * settings files' hooks, re-read when a file changed); throws CONFIG_ERROR while they cannot
   * be read. Without it, `hooks` stay as given.
   */
  reload?: HooksReader;
  /** Absolute workspace root: every hook runs there (cwd) and sees it as `cwd`. */
  workspace: string;
  clock: Clock;
  log: Logger;
  /** Publishes a `hook.run` event for the session (awaited, so it is stored before the caller goes on). */
  emit(sessionId: string, event: VeilEventBody): void | Promise<unknown>;
  /** Environment of the hook commands. default: process.env */
  env?: NodeJS.ProcessEnv;
}

interface CompiledHook {
  matcher: RegExp | null;
  command: HookCommand;
}

interface HookRun {
  command: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/**
 * Runs the user's lifecycle hooks (Claude Code's shape): each
 * matching command gets the event as JSON on stdin, runs with `sh -c` in the
 * workspace, and may block by exiting 2 or printing
 * `{"decision":"block","reason":…}`. A hook that cannot start, fails or times out
 * lets the turn go on. With `reload`, the hooks in force are those of the settings
 * files now; while those cannot be read it fails closed: tool calls are blocked with
 * the CONFIG_ERROR and userPromptSubmit throws it (the only method that throws).
 */
export class HookRunner {
  private byEvent: Map<HookEventName, CompiledHook[]>;
  /** The hooks `byEvent` was compiled from. */
  private source: HooksSettings | undefined;
  /** Set while the hooks cannot be read: every tool call fails with it, and prompts are refused. */
  private broken: VeilError | undefined;
  private readonly continuations = new Map<string, number>();

  /** Throws CONFIG_ERROR when a matcher is not a valid regular expression. */
  constructor(private readonly options: HookRunnerOptions) {
    this.source = options.hooks;
    this.byEvent = compileHooks(options.hooks);
  }

  /**
   * True when any hook is configured for `event` (lets callers skip building inputs), and
   * while the hooks cannot be read (the call must come in to fail). `reread: false` answers
   * from the hooks taken up last (a tool call's later checks use the hooks its first one read:
   * two stats of the settings files per call instead of one pair per check).
   */
  has(event: HookEventName, options: { reread?: boolean } = {}): boolean {
    if (options.reread !== false) this.refresh();
    return this.broken !== undefined || this.byEvent.has(event);
  }

  /** Before a tool runs. Blocked: do not run it; `reason` is the tool result the model sees. */
  preToolUse(input: { sessionId: string; toolName: string; toolInput: unknown }): Promise<HookDecision> {
    return this.decide("PreToolUse", input.sessionId, input.toolName, { tool_name: input.toolName, tool_input: input.toolInput });
  }

  /** After a tool ran. Blocked: the tool already ran; `reason` is feedback for the model. */
  postToolUse(input: { sessionId: string; toolName: string; toolInput: unknown; toolResponse: unknown }): Promise<HookDecision> {
    return this.decide("PostToolUse", input.sessionId, input.toolName, { tool_name: input.toolName, tool_input: input.toolInput, tool_response: input.toolResponse });
  }

  /** Before a user message is accepted. Blocked: refuse it (400 HOOK_BLOCKED); `context`: the hooks' stdout, extra context for the model. */
  async userPromptSubmit(input: { sessionId: string; prompt: string }): Promise<HookDecision> {
    this.continuations.delete(input.sessionId);
    return this.decide("UserPromptSubmit", input.sessionId, null, { prompt: input.prompt });
  }

  /**
   * When a run is about to end. `continueWith`: send it to the model as a new user
   * message and go on. At most MAX_STOP_CONTINUATIONS in a row; the count resets
   * when a Stop lets the run end or a new prompt arrives.
   */
  async stop(input: { sessionId: string }): Promise<{ continueWith?: string }> {
    const count = this.continuations.get(input.sessionId) ?? 0;
    if (!this.has("Stop")) return {};
    const decision = await this.decide("Stop", input.sessionId, null, { stop_hook_active: count > 0 });
    if (!decision.blocked) {
      this.continuations.delete(input.sessionId);
      return {};
    }
    if (count >= MAX_STOP_CONTINUATIONS) {
      this.options.log.warn(`Stop hook asked to continue a ${count + 1}th time in a row; the limit is ${MAX_STOP_CONTINUATIONS}, so the run ends`, { sessionId: input.sessionId });
      this.continuations.delete(input.sessionId);
      return {};
    }
    this.continuations.set(input.sessionId, count + 1);
    return { continueWith: decision.reason };
  }

  /** When a session is created (`source` "startup") or resumed ("resume"). `context`: the hooks' stdout for the model. */
  async sessionStart(input: { sessionId: string; source?: "startup" | "resume" }): Promise<{ context?: string }> {
    const decision = await this.decide("SessionStart", input.sessionId, null, { source: input.source ?? "startup" });
    return decision.blocked ? {} : decision.context ? { context: decision.context } : {};
  }

  /** A run ended (however): the next run's first Stop starts a fresh count (`stop_hook_active` false). */
  runEnded(sessionId: string): void {
    this.continuations.delete(sessionId);
  }

  /** Forgets a closed session's Stop count. */
  endSession(sessionId: string): void {
    this.continuations.delete(sessionId);
  }

  /** Takes up the hooks now in force; a change is logged, and so, loudly, is hooks that cannot be read. */
  private refresh(): void {
    if (!this.options.reload) return;
    let next: HooksSettings | undefined;
    let compiled: Map<HookEventName, CompiledHook[]>;
    try {
      next = this.options.reload();
      if (next === this.source && !this.broken) return;
      compiled = next === this.source ? this.byEvent : compileHooks(next);
    } catch (error) {
      const problem = isVeilError(error) ? error : new VeilError("CONFIG_ERROR", errorMessage(error), { cause: error });
      if (this.broken?.message !== problem.message) {
        this.options.log.error(`hooks cannot be read, so every tool call fails and user prompts are refused until the settings are fixed: ${problem.message}`);
      }
      this.broken = problem;
      return;
    }
    this.broken = undefined;
    this.source = next;
    this.byEvent = compiled;
    const counts = Object.fromEntries([...compiled].map(([event, hooks]) => [event, hooks.length]));
    this.options.log.info("settings hooks changed; these are in force now", { hooks: counts });
  }

  /** While the hooks cannot be read: a tool call fails (before it runs, or as feedback after), a prompt is refused. */
  private failClosed(event: HookEventName, broken: VeilError): HookDecision {
    if (event === "UserPromptSubmit") throw broken;
    if (event === "PreToolUse" || event === "PostToolUse") {
      return { blocked: true, reason: formatToolError(broken.code, `${broken.message.replace(/\.$/, "")}. The hooks in force cannot be read, so ${event === "PreToolUse" ? "this call did not run" : "this call's result was not checked"}; no tool runs until the settings are fixed`) };
    }
    // Stop and SessionStart add to a run; logged loudly above, they do not stop it.
    return { blocked: false };
  }

  private async decide(event: HookEventName, sessionId: string, toolName: string | null, fields: Record<string, unknown>): Promise<HookDecision> {
    this.refresh();
    if (this.broken) return this.failClosed(event, this.broken);
    const hooks = (this.byEvent.get(event) ?? []).filter((hook) => !hook.matcher || toolName === null || hook.matcher.test(toolName));
    if (hooks.length === 0) return { blocked: false };
    const stdin = JSON.stringify({ session_id: sessionId, hook_event_name: event, cwd: this.options.workspace, ...fields });
    // Hooks of one event run in parallel, as in Claude Code.
    const runs = await Promise.all(hooks.map((hook) => this.runOne(event, sessionId, hook.command, stdin)));
    const reasons = runs.flatMap((run) => (run.decision.blocked ? [run.decision.reason] : []));
    if (reasons.length) return { blocked: true, reason: reasons.join("\n") };
    const context = runs.map((run) => (run.decision.blocked ? "" : (run.decision.context ?? ""))).filter(Boolean).join("\n");
    return context ? { blocked: false, context } : { blocked: false };
  }

  private async runOne(event: HookEventName, sessionId: string, hook: HookCommand, stdin: string): Promise<{ decision: HookDecision }> {
    const started = this.options.clock.monotonic();
    const timeoutMs = Math.round((hook.timeout ?? DEFAULT_HOOK_TIMEOUT_SECONDS) * 1000);
    const run = await this.exec(hook.command, stdin, timeoutMs);
    const decision = interpret(event, run);
    const durationMs = Math.round(this.options.clock.monotonic() - started);
    if (run.timedOut) this.options.log.warn(`${event} hook timed out after ${timeoutMs / 1000} s and was killed (counts as exit 0)`, { command: hook.command, sessionId });
    else if (run.exitCode !== 0 && run.exitCode !== BLOCKING_EXIT_CODE) {
      this.options.log.warn(`${event} hook failed with exit code ${run.exitCode} (not blocking; only exit 2 blocks)`, { command: hook.command, stderr: run.stderr.slice(0, 2000), sessionId });
    }
    try {
      await this.options.emit(sessionId, { type: "hook.run", event, command: hook.command, exitCode: run.exitCode, durationMs, blocked: decision.blocked, ...(run.timedOut ? { timedOut: true } : {}) });
    } catch (error) {
      this.options.log.warn("hook.run event could not be published", { error: String(error), sessionId });
    }
    return { decision };
  }

  /** `sh -c command` in its own process group; the group is killed at the timeout. */
  private exec(command: string, stdin: string, timeoutMs: number): Promise<HookRun> {
    return new Promise((resolve) => {
      const out: HookRun = { command, exitCode: null, stdout: "", stderr: "", timedOut: false };
      const env = { ...(this.options.env ?? process.env), VEIL_PROJECT_DIR: this.options.workspace, CLAUDE_PROJECT_DIR: this.options.workspace };
      const child = spawn("sh", ["-c", command], { cwd: this.options.workspace, env, stdio: ["pipe", "pipe", "pipe"], detached: true });
      let settled = false;
      let cancelGrace: (() => void) | undefined;
      const finish = () => {
        if (settled) return;
        settled = true;
        cancelTimeout();
        cancelGrace?.();
        child.stdout.removeAllListeners("data");
        child.stderr.removeAllListeners("data");
        child.stdout.destroy();
        child.stderr.destroy();
        resolve(out);
      };
      const cancelTimeout = this.options.clock.setTimer(timeoutMs, () => {
        out.timedOut = true;
        out.exitCode = null;
        killGroup(child.pid);
        finish();
      });
      const collect = (key: "stdout" | "stderr") => (chunk: Buffer) => {
        if (out[key].length < MAX_OUTPUT_BYTES) out[key] += chunk.toString("utf8");
      };
      child.stdout.on("data", collect("stdout"));
      child.stderr.on("data", collect("stderr"));
      child.stdin.on("error", () => {
        // The hook did not read its input (EPIPE): fine.
      });
      child.stdin.end(stdin);
      child.once("error", (error) => {
        out.stderr = `could not run sh: ${error.message}`;
        out.exitCode = null;
        finish();
      });
      child.once("exit", (code) => {
        if (settled) return;
        out.exitCode = code;
        cancelGrace = this.options.clock.setTimer(STDIO_GRACE_MS, finish);
      });
      child.once("close", finish);
    });
  }
}

function compileHooks(hooks: HooksSettings | undefined): Map<HookEventName, CompiledHook[]> {
  const byEvent = new Map<HookEventName, CompiledHook[]>();
  for (const [event, groups] of Object.entries(hooks ?? {}) as [HookEventName, NonNullable<HooksSettings[HookEventName]>][]) {
    const compiled: CompiledHook[] = [];
    for (const group of groups) {
      const matcher = compileMatcher(event, group.matcher);
      for (const command of group.hooks) compiled.push({ matcher, command });
    }
    if (compiled.length) byEvent.set(event, compiled);
  }
  return byEvent;
}

function compileMatcher(event: HookEventName, matcher: string | undefined): RegExp | null {
  if (matcher === undefined || matcher === "" || matcher === "*") return null;
  try {
    return new RegExp(`^(?:${matcher})$`);
  } catch (error) {
    throw new VeilError("CONFIG_ERROR", `settings.json hooks.${event}: matcher ${JSON.stringify(matcher)} is not a valid regular expression (${(error as Error).message})`);
  }
}

/** Exit 2 blocks with stderr; exit 0 may block through stdout JSON; anything else goes on. */
function interpret(event: HookEventName, run: HookRun): HookDecision {
  if (run.timedOut) return { blocked: false };
  if (run.exitCode === BLOCKING_EXIT_CODE) return { blocked: true, reason: run.stderr.trim() || `blocked by ${event} hook \`${run.command}\`` };
  if (run.exitCode !== 0) return { blocked: false };
  const text = run.stdout.trim();
  const json = text.startsWith("{") ? parseObject(text) : null;
  if (json) {
    const specific = (json.hookSpecificOutput ?? {}) as Record<string, unknown>;
    if (json.decision === "block" || specific.permissionDecision === "deny") {
      const reason = json.reason ?? specific.permissionDecisionReason;
      return { blocked: true, reason: typeof reason === "string" && reason.trim() ? reason : `blocked by ${event} hook \`${run.command}\`` };
    }
    return typeof specific.additionalContext === "string" && specific.additionalContext ? { blocked: false, context: specific.additionalContext } : { blocked: false };
  }
  // Plain stdout of a prompt or session hook is context for the model (Claude Code's reading).
  return (event === "UserPromptSubmit" || event === "SessionStart") && text ? { blocked: false, context: text } : { blocked: false };
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}
