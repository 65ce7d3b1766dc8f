import { readFileSync } from "node:fs";
import type { VeilEvent } from "../base/events.js";
import { compileOutputSchema, type OutputSchema } from "../engines/output-schema.js";
import { VeilError } from "../errors.js";
import { createRuntime, type Runtime } from "../runtime.js";
import type { SessionRow } from "../store/store.js";
import { closeExpiredSessions } from "../core/session-cleanup.js";
import { preview } from "../tools/format.js";
import { UsageError, commandUsage, type RunCommand } from "./args.js";
import { answerApprovals } from "./approval-prompt.js";
import { EXIT_INTERRUPTED, watchInterrupt } from "./interrupt.js";
import { cliLogger, paintFor, type CliIo, type Paint } from "./terminal.js";

export type { CliIo } from "./terminal.js";

/**
 * One turn in process (no server): assistant text to stdout; thinking (dimmed) and tool
 * activity to stderr. With an output schema, stdout gets only the final answer's JSON. The
 * session stays open, so `--session ID` / `--continue` can go on with it later. Returns the
 * exit code.
 */
export async function runOnce(command: RunCommand, io: CliIo): Promise<number> {
  // A schema file that cannot be read or compiled fails before anything starts.
  const outputSchema = command.outputSchema === undefined ? undefined : readOutputSchema(command.outputSchema);
  const prompt = await resolvePrompt(command, io);
  // Ctrl-C cancels the turn like POST /sessions/:id/cancel: the session goes idle with every
  // tool call answered, so --continue can go on; a second Ctrl-C quits at once.
  const interrupt = watchInterrupt(io);
  try {
    const runtime = await createRuntime({ workspace: command.workspace, mode: "oneshot", env: io.env, log: cliLogger(io, command.logFormat, "warn") });
    try {
      const session = await pickSession(runtime, command);
      // Checked before the turn, so a missing model or key is one CONFIG_ERROR line and nothing is sent.
      await runtime.sessions.checkModelReady(session, command.model);
      if (interrupt.requested) return cancelled(io);
      const renderer = command.json ? (event: VeilEvent) => io.stdout(JSON.stringify(event) + "\n") : createRenderer(io, { text: !outputSchema });
      const unsubscribe = runtime.bus.subscribe({ sessionId: session.id }, renderer);
      const stopAnswering = answerApprovals(runtime, io);
      const receipt = await runtime.sessions.send(session.id, prompt, { model: command.model, meta: { source: "cli" }, ...(outputSchema ? { outputSchema } : {}) });
      interrupt.onFirst(() => void runtime.sessions.cancel(session.id).catch((error: unknown) => runtime.log.warn("could not cancel the turn", { error: String(error) })));
      const result = await receipt.result;
      stopAnswering();
      unsubscribe();
      if (!command.json) (renderer as Renderer).finish();
      if (result.stopReason === "error") {
        io.stderr(`${result.error?.code ?? "ERROR"}: ${result.error?.message ?? "run failed"}\n`);
        return 1;
      }
      if (result.stopReason === "cancelled") return cancelled(io);
      if (outputSchema && !command.json && "structured" in result) io.stdout(`${JSON.stringify(result.structured)}\n`);
      if (result.stopReason !== "stop") io.stderr(`run stopped: ${result.stopReason}\n`);
      return result.stopReason === "stop" || result.stopReason === "length" ? 0 : 2;
    } finally {
      await runtime.close();
    }
  } finally {
    interrupt.dispose();
  }
}

function cancelled(io: CliIo): number {
  io.stderr("cancelled\n");
  return EXIT_INTERRUPTED;
}

/** The --output-schema file, compiled: FILE_NOT_FOUND, or VALIDATION_ERROR naming what is wrong. */
function readOutputSchema(path: string): OutputSchema {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new VeilError("FILE_NOT_FOUND", `--output-schema: cannot read ${path}: ${(error as Error).message}`);
  }
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (error) {
    throw new VeilError("VALIDATION_ERROR", `--output-schema: ${path} is not JSON: ${(error as Error).message}`);
  }
  return compileOutputSchema(schema, `--output-schema ${path}`);
}

/** The prompt: the arguments, else stdin when it is `-` or piped. */
async function resolvePrompt(command: RunCommand, io: CliIo): Promise<string> {
  if (command.prompt !== undefined) return command.prompt;
  const fromStdin = io.stdinIsTTY || !io.readStdin ? "" : (await io.readStdin()).trim();
  if (!fromStdin) throw new UsageError('veil run: no prompt (give it as an argument, or pipe it in with "-")', commandUsage("run"));
  return fromStdin;
}

/** A new session of the chosen agent, the one named by --session, or the last active one (--continue). */
async function pickSession(runtime: Runtime, command: RunCommand): Promise<SessionRow> {
  // One-shot sessions nobody continued within limits.idleSessionTtl are closed first, so
  // --continue never picks one that has expired (the server does the same every minute).
  await closeExpiredSessions({ store: runtime.store, sessions: runtime.sessions, clock: runtime.clock, settings: runtime.config.settings }, { origins: ["run"] });
  if (command.session !== undefined) {
    const row = await runtime.sessions.get(command.session);
    if (row.status === "closed") throw new VeilError("SESSION_CLOSED", `session "${row.id}" is closed; start a new one without --session`);
    return runtime.sessions.keep(row.id);
  }
  if (command.continueLast) {
    const row = lastActive(await runtime.store.listSessions());
    if (!row) throw new VeilError("SESSION_NOT_FOUND", `no open top-level session to continue in ${runtime.config.paths.workspace}; run without --continue to start one`);
    return runtime.sessions.keep(row.id);
  }
  return runtime.sessions.create({ agent: command.agent ?? "default", origin: "run", ephemeral: true });
}

/** The most recently active open top-level session (sub-agents are continued through their parent). */
export function lastActive(rows: readonly SessionRow[]): SessionRow | undefined {
  let best: SessionRow | undefined;
  for (const row of rows) {
    if (row.parent_session_id !== null || row.status === "closed") continue;
    if (!best || row.updated_at >= best.updated_at) best = row;
  }
  return best;
}

type Renderer = ((event: VeilEvent) => void) & { finish(): void };

/** Human output: text as it streams to stdout (unless `text` is off); thinking dimmed and tool activity on stderr. */
function createRenderer(io: CliIo, show: { text: boolean }): Renderer {
  const err = paintFor(io.env, io.stderrIsTTY);
  let stdoutAtLineStart = true;
  let thinking = false;
  const endThinking = () => {
    if (thinking) io.stderr("\n");
    thinking = false;
  };
  const render = (event: VeilEvent) => {
    switch (event.type) {
      case "thinking.chunk":
        if (!thinking) io.stderr(err.dim("thinking: "));
        thinking = true;
        io.stderr(err.dim(event.content));
        break;
      case "chat.chunk":
        endThinking();
        if (!show.text) break;
        io.stdout(event.content);
        stdoutAtLineStart = event.content.endsWith("\n");
        break;
      case "tool.start":
        endThinking();
        if (!stdoutAtLineStart) {
          io.stdout("\n");
          stdoutAtLineStart = true;
        }
        io.stderr(`${err.cyan("▸")} ${err.bold(event.toolName)} ${err.dim(preview(JSON.stringify(event.toolInput ?? {}), 160))}\n`);
        break;
      case "tool.end":
        io.stderr(`${toolMark(err, event.success)} ${event.toolName} ${err.dim(`(${event.durationMs} ms)`)} ${preview(event.output.replace(/\s+/g, " "), 160)}\n`);
        break;
      default:
        break;
    }
  };
  return Object.assign(render, {
    finish() {
      endThinking();
      if (!stdoutAtLineStart) io.stdout("\n");
    },
  });
}

function toolMark(paint: Paint, success: boolean): string {
  return success ? paint.green("✓") : paint.red("✗");
}
