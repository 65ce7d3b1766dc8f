import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Clock } from "../../../base/clock.js";
import { checkScript, driverLine, initScript, readyLine } from "./bash-script.js";
import { killTree, terminateDescendants, waitForExit, type Isolation, type KillTarget } from "./isolation.js";
import { ChunkThrottle, OutputCapture, type CapturedOutput } from "./output-capture.js";
import { SentinelScanner, type SentinelResult } from "./sentinel-scanner.js";
import { spawnShellProcess, type ShellProcess } from "./spawn-helper.js";
import type { ShellLaunch } from "./launch.js";

/** How long bash may take to start and read ~/.bashrc before we retry without it. */
export const READY_TIMEOUT_MS = 15_000;
/** After the shell exits, how long we wait for its last output to drain. */
const DRAIN_MS = 200;
/**
 * At most how long the scripts of a ~/.bashrc cut short get for their exit traps before
 * the SIGKILL; the wait ends as soon as they are gone.
 */
const RC_TERM_GRACE_MS = 1_000;
/** Bound on what we keep of bash's own stderr (startup warnings, before `exec 2>&1`). */
const STDERR_KEEP = 4_096;

export type RunOutcome = "completed" | "syntax-error" | "timeout" | "cancelled" | "shell-exited";

export interface RunResult {
  outcome: RunOutcome;
  /** `$?` of the command; for shell-exited, the shell's exit status. */
  exitCode: number | null;
  /** Shell's cwd after the command (null when the shell died). */
  cwd: string | null;
  output: CapturedOutput;
}

export interface RunOptions {
  timeoutMs: number;
  signal?: AbortSignal;
  /** Live output, already coalesced. */
  onChunk?: (chunk: string) => void;
  /** Max chars kept (default 30000). */
  maxChars?: number;
}

export interface PersistentShellOptions {
  /** Directory the shell starts in. */
  cwd: string;
  isolation: Isolation;
  /** Private folder for command files (a promise: the folder may still be being made). */
  tempDir: string | Promise<string>;
  clock: Clock;
  /** Let bash read ~/.bashrc at spawn. default: true */
  loadBashrc?: boolean;
  readyTimeoutMs?: number;
  /** default: inherited */
  env?: Record<string, string | undefined>;
  /** Starts each bash process inside a sandbox (its argv prefix and environment replace isolation's and env). */
  launch?: (tag: string) => Promise<ShellLaunch>;
}

interface Pending {
  scanner: SentinelScanner;
  finish: (outcome: RunOutcome, sentinel: SentinelResult | null, exitStatus?: number | null) => void;
}

/**
 * One long-lived `bash -i` (so ~/.bashrc is read once, as on a terminal). Commands run
 * one at a time inside it, so `cd`, `export`, aliases and functions persist. A command
 * that times out or is cancelled takes the shell down with it (whole tree killed, see
 * isolation.ts): the caller gets a dead shell and spawns a new one.
 */
export class PersistentShell {
  readonly tag = randomBytes(8).toString("hex");
  private child?: ShellProcess;
  private pending?: Pending;
  private queue: Promise<unknown> = Promise.resolve();
  private exited?: Promise<void>;
  private stderrTail = "";
  private dead = false;
  /** dispose() was called: this shell never starts (again). */
  private closed = false;
  private inFlight = 0;
  /** Between spawning bash with ~/.bashrc and its ready line. */
  private rcRunning = false;
  /** Set when ~/.bashrc kept bash from starting and we started without it. */
  bashrcSkipped = false;
  cwd: string;

  constructor(private readonly options: PersistentShellOptions) {
    this.cwd = options.cwd;
  }

  get alive(): boolean {
    return !this.dead;
  }

  /** A command is running (or queued). */
  get busy(): boolean {
    return this.pending !== undefined || this.inFlight > 0;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts bash and waits until it answers; falls back to --norc once if ~/.bashrc wedges it. */
  async start(): Promise<void> {
    // Disposed while it waited for its turn to start (a prewarmed shell of a session that ended).
    if (this.closed) throw new Error("the shell was closed before it started");
    const loadBashrc = this.options.loadBashrc ?? true;
    const ready = await this.spawnAndWait(loadBashrc);
    if (ready) return;
    await this.stop();
    const detail = this.stderrTail.trim();
    // Closed while starting (its session ended): no second try, which nothing would ever end.
    if (loadBashrc && !this.closed) {
      this.dead = false;
      this.stderrTail = "";
      this.bashrcSkipped = true;
      if (await this.spawnAndWait(false)) return;
      await this.stop();
    }
    throw new Error(this.closed ? "the shell was closed while it started" : `bash did not start${detail ? `: ${detail}` : ""}`);
  }

  /** Runs one command; calls are queued so only one runs at a time. */
  run(command: string, options: RunOptions): Promise<RunResult> {
    this.inFlight++;
    const next = this.queue.then(() => this.runNow(command, options)).finally(() => this.inFlight--);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * SIGKILLs the shell and everything it started, and waits until the spawned process
   * is reaped and no process carrying the shell's tag is left.
   */
  async dispose(): Promise<void> {
    this.closed = true;
    await this.stop();
  }

  private async stop(): Promise<void> {
    this.dead = true;
    if (this.child?.pid !== undefined) {
      // Stopped while ~/.bashrc runs: a SIGTERM first lets its scripts run their exit traps
      // (pyenv's rehash holds a lock file that a SIGKILL would leave behind, stalling every
      // later shell of the user for a minute). Interactive bash ignores it; the SIGKILL follows.
      if (this.rcRunning) {
        await waitForExit(terminateDescendants(this.target()), RC_TERM_GRACE_MS);
      }
      await killTree(this.target());
    }
    await this.exited;
  }

  private target(): KillTarget {
    return { pid: this.child!.pid!, tag: this.tag, mode: this.options.isolation.mode };
  }

  private async spawnAndWait(loadBashrc: boolean): Promise<boolean> {
    const { isolation } = this.options;
    const bashArgs = ["--noediting", "--noprofile", ...(loadBashrc ? [] : ["--norc"]), "-i"];
    const launch = this.options.launch ? await this.options.launch(this.tag) : undefined;
    const argv = [...(launch?.prefix ?? isolation.prefix), "bash", ...bashArgs];
    const child = await spawnShellProcess({ file: argv[0]!, args: argv.slice(1), cwd: this.cwd, env: launch?.env ?? this.options.env });
    this.child = child;
    this.exited = new Promise((resolve) => {
      const ended = () => void (launch?.close() ?? Promise.resolve()).finally(resolve);
      child.once("exit", (code: number | null, signal: NodeJS.Signals | null) => {
        this.dead = true;
        this.onExit(code ?? (signal ? 128 : null));
        ended();
      });
      child.once("error", (error: Error) => {
        this.stderrTail += String(error.message);
        this.dead = true;
        this.onExit(null);
        ended();
      });
    });
    child.stdout.on("data", (data: Buffer) => this.onData(data));
    child.stderr.on("data", (data: Buffer) => {
      this.stderrTail = (this.stderrTail + data.toString("utf8")).slice(-STDERR_KEEP);
    });
    child.stdin.on("error", () => undefined);
    // Closed while the spawn helper started it: start() ends it now (dispose() found no process yet).
    if (this.closed) return false;

    const token = randomBytes(12).toString("hex");
    this.rcRunning = loadBashrc;
    return new Promise<boolean>((resolve) => {
      const cancelTimer = this.options.clock.setTimer(this.options.readyTimeoutMs ?? READY_TIMEOUT_MS, () => {
        this.pending = undefined;
        resolve(false);
      });
      this.pending = {
        // ~/.bashrc output before the ready sentinel is dropped.
        scanner: new SentinelScanner(token, () => undefined),
        finish: (outcome, sentinel) => {
          cancelTimer();
          this.pending = undefined;
          this.rcRunning = false;
          if (sentinel) this.cwd = sentinel.cwd;
          resolve(outcome === "completed");
        },
      };
      child.stdin.write(initScript(this.tag) + readyLine(token));
    });
  }

  private onData(data: Buffer): void {
    const pending = this.pending;
    if (!pending) return; // stray output of background jobs between commands
    const sentinel = pending.scanner.push(data);
    if (sentinel) pending.finish(sentinel.syntaxError ? "syntax-error" : "completed", sentinel);
  }

  private onExit(status: number | null): void {
    const pending = this.pending;
    if (!pending) return;
    // Let the last bytes in the pipe arrive before reporting.
    const stdout = this.child?.stdout;
    let done = false;
    const report = () => {
      if (done) return;
      done = true;
      pending.scanner.drain();
      pending.finish("shell-exited", null, status);
    };
    if (!stdout || stdout.readableEnded) return report();
    stdout.once("end", report);
    this.options.clock.setTimer(DRAIN_MS, report);
  }

  private async runNow(command: string, options: RunOptions): Promise<RunResult> {
    if (this.dead || !this.child) throw new Error("the shell is not running");
    const token = randomBytes(12).toString("hex");
    // Commands run one at a time, so the same three files serve every command.
    const tempDir = await this.options.tempDir;
    const files = {
      command: join(tempDir, `fg-command-${this.tag}.sh`),
      check: join(tempDir, `fg-check-${this.tag}.sh`),
      checkErrors: join(tempDir, `fg-check-${this.tag}.err`),
    };
    // Off the event loop: with hundreds of sessions, synchronous writes here added up to stalls.
    await Promise.all([writeFile(files.command, command), writeFile(files.check, checkScript(command))]);
    if (this.dead || !this.child) throw new Error("the shell is not running");
    const throttle = options.onChunk ? new ChunkThrottle(options.onChunk, this.options.clock) : undefined;
    const capture = new OutputCapture(options.maxChars, throttle);
    return new Promise<RunResult>((resolve) => {
      const settle = (outcome: RunOutcome, sentinel: SentinelResult | null, exitStatus?: number | null) => {
        cancelTimer();
        options.signal?.removeEventListener("abort", onAbort);
        this.pending = undefined;
        if (sentinel) this.cwd = sentinel.cwd;
        if (outcome === "syntax-error") capture.push(syntaxErrors(files.checkErrors, files.check));
        const exitCode = sentinel ? sentinel.exitCode : outcome === "shell-exited" ? (exitStatus ?? null) : null;
        resolve({ outcome, exitCode, cwd: sentinel?.cwd ?? null, output: capture.finish() });
      };
      const killFor = (outcome: "timeout" | "cancelled") => {
        if (this.pending?.finish !== finish) return;
        this.pending = undefined;
        pending.scanner.drain();
        void this.dispose().then(() => settle(outcome, null));
      };
      const finish: Pending["finish"] = settle;
      const pending: Pending = { scanner: new SentinelScanner(token, (data) => capture.push(data)), finish };
      const cancelTimer = this.options.clock.setTimer(options.timeoutMs, () => killFor("timeout"));
      const onAbort = () => killFor("cancelled");
      this.pending = pending;
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.child!.stdin.write(driverLine(files, token));
    });
  }
}

/** bash's messages about the check file, with the file's path taken out. */
function syntaxErrors(errorFile: string, checkFile: string): Buffer {
  let text = "";
  try {
    text = readFileSync(errorFile, "utf8");
  } catch {
    text = "bash: syntax error";
  }
  return Buffer.from(text.replaceAll(`${checkFile}: `, ""));
}
