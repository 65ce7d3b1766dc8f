import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { Type, type Static } from "../../schema.js";
import { defineTool } from "../define.js";
import { ToolError } from "../../errors.js";
import type { ToolOutcome } from "../types.js";
import { renderCaptured } from "../shared/shell/output-capture.js";
import { openSessionShells, prewarmSessionShell } from "../shared/shell/session-shells.js";
import type { ForegroundRun } from "../shared/shell/shell-manager.js";

const DEFAULT_TIMEOUT_S = 120;
const MAX_TIMEOUT_S = 600;

const Params = Type.Object(
  {
    command: Type.String({ minLength: 1 }),
    timeout: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_TIMEOUT_S,
        description: `Seconds (default ${DEFAULT_TIMEOUT_S}); ignored when run_in_background`,
      }),
    ),
    run_in_background: Type.Optional(
      Type.Boolean({
        description: "Run in the background, return a shell_id at once (see bash_output, kill_shell)",
      }),
    ),
    workingDir: Type.Optional(
      Type.String({
        description: "Initial working directory; honored only on the FIRST bash call in a session",
      }),
    ),
  },
  { additionalProperties: false },
);

export const bash = defineTool({
  name: "bash",
  description:
    "Execute a shell command in this session's persistent shell (cd, export survive). Returns stdout+stderr; a non-zero exit is " +
    "prefixed `exit code: N`; output capped at 30000 chars. No TTY: interactive prompts are not supported. Long-running: use run_in_background.",
  params: Params,
  // The first call of a session would wait for bash (and the isolation probe) to start.
  warmUp: prewarmSessionShell,
  async execute(input: Static<typeof Params>, ctx) {
    const shells = await openSessionShells(ctx);
    const workingDir = input.workingDir === undefined ? undefined : checkedDir(ctx.workspace, input.workingDir);
    if (input.run_in_background) {
      const shell = await shells.startBackground(input.command, workingDir, ctx.toolCallId);
      const state = shell.state();
      const result = {
        shell_id: state.shell_id,
        pid: state.pid,
        status: "running" as const,
        startedAt: state.startedAt,
        command: state.command,
        note: `Running in the background. Poll new output with bash_output({"shell_id":"${state.shell_id}"}); stop it with kill_shell({"shell_id":"${state.shell_id}"}).`,
      };
      return { output: JSON.stringify(result), details: { ...result, isolation: shells.isolationMode } };
    }
    if (ctx.signal.aborted) throw new ToolError("CANCELLED", "Cancelled before the command started; nothing was run.");
    const timeoutS = input.timeout ?? DEFAULT_TIMEOUT_S;
    const started = ctx.clock.monotonic();
    const run = await shells.run(input.command, {
      timeoutMs: timeoutS * 1000,
      signal: ctx.signal,
      onChunk: (chunk) => ctx.emitChunk(chunk),
      workingDir,
      toolCallId: ctx.toolCallId,
    });
    const seconds = ((ctx.clock.monotonic() - started) / 1000).toFixed(1);
    if (run.outcome === "cancelled") {
      throw new ToolError(
        "CANCELLED",
        `Command cancelled after ${seconds}s; its processes were killed and the shell restarted (cd/export state lost).`,
      );
    }
    return render(run, timeoutS, shells.isolationMode);
  },
});

/** Resolves workingDir against the workspace; it must be an existing directory. */
function checkedDir(workspace: string, dir: string): string {
  const full = isAbsolute(dir) ? dir : resolve(workspace, dir);
  const stat = statSync(full, { throwIfNoEntry: false });
  if (!stat) throw new ToolError("FILE_NOT_FOUND", `workingDir does not exist: ${dir}`);
  if (!stat.isDirectory()) throw new ToolError("NOT_A_DIRECTORY", `workingDir is not a directory: ${dir}`);
  return full;
}

/**
 * `exit code: N` is the first line when N ≠ 0, a prefix the model can rely on; notes about the
 * shell itself (timeout, restart, ignored workingDir) come last, after the output.
 */
function render(run: ForegroundRun, timeoutS: number, isolation: string): ToolOutcome {
  const body = renderCaptured(run.output);
  const notes: string[] = [];
  let prefix = run.exitCode !== null && run.exitCode !== 0 ? `exit code: ${run.exitCode}` : "";
  switch (run.outcome) {
    case "syntax-error":
      notes.push("[Syntax check failed, so nothing was run. Close the quote, heredoc or block (if/for/while/case/{…}) and retry.]");
      break;
    case "timeout":
      prefix = "";
      notes.push(
        `[Command timed out after ${timeoutS}s and was killed with its whole process tree. The shell was restarted ` +
          `(background jobs started with & in it were killed too): the session lost its cd/export/alias state; ` +
          `the next command starts in ${run.initialDir}.]`,
      );
      break;
    case "shell-exited":
      notes.push(
        `[The shell itself exited (exit, exec, or set -e). The next command starts a fresh shell in ${run.initialDir}; ` +
          `the session lost its cd/export/alias state.]`,
      );
      break;
  }
  if (run.workingDirIgnored) notes.push("[workingDir ignored: it applies only to the first bash call of a session. Use cd instead.]");
  if (run.spawned && run.bashrcSkipped) notes.push("[~/.bashrc kept bash from starting, so this shell runs without it.]");
  const main = [prefix, body].filter(Boolean).join("\n") || "(no output)";
  const output = notes.length > 0 ? `${main}\n\n${notes.join("\n")}` : main;
  const failed = run.outcome !== "completed" || (run.exitCode ?? 0) !== 0;
  return {
    output,
    isError: failed || undefined,
    details: {
      outcome: run.outcome,
      exitCode: run.exitCode,
      cwd: run.cwd,
      totalChars: run.output.totalChars,
      totalBytes: run.output.totalBytes,
      truncated: run.output.truncated,
      shellRestarted: run.outcome === "timeout" || run.outcome === "shell-exited",
      isolation,
    },
  };
}
