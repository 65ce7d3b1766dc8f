import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { Readable } from "node:stream";
import type { Clock } from "../../../base/clock.js";
import { MAX_OUTPUT_CHARS } from "../truncate.js";
import { backgroundScript, shellQuote } from "./bash-script.js";
import { killTree, signalTree, type Isolation, type KillTarget } from "./isolation.js";
import { FORWARDER_VARIABLE, type ShellLaunch } from "./launch.js";

/** Unread output kept per background shell; older unread bytes are dropped past this. */
export const BACKGROUND_BUFFER_BYTES = 256 * 1024;
/** kill_shell: SIGTERM first, SIGKILL after this long (2 seconds, as kill_shell's description says). */
export const KILL_GRACE_MS = 2_000;

export type BackgroundStatus = "running" | "exited" | "killed";

export interface BackgroundState {
  shell_id: string;
  pid: number;
  command: string;
  startedAt: string;
  status: BackgroundStatus;
  exitCode: number | null;
  signal: string | null;
  /** Bytes of output the shell produced so far. */
  totalBytes: number;
  /** Bytes already returned by earlier polls. */
  readBytes: number;
  /** Bytes dropped unread because the buffer was full between polls. */
  droppedBytes: number;
}

export interface BackgroundPoll {
  state: BackgroundState;
  /** New output since the previous poll (at most `maxChars`, the most recent kept). */
  output: string;
  newBytes: number;
  /** Chars of this poll's new output left out (older ones) to respect the cap. */
  omittedChars: number;
  /** Bytes lost before this poll because the unread buffer overflowed. */
  droppedBytes: number;
}

export interface BackgroundShellOptions {
  id: string;
  command: string;
  cwd: string;
  isolation: Isolation;
  tempDir: string;
  clock: Clock;
  /** File with the foreground shell's exports, functions and aliases. */
  snapshotFile?: string;
  /** default: inherited */
  env?: Record<string, string | undefined>;
  /** Started inside a sandbox: this launch's prefix and environment replace isolation's and env. */
  launched?: ShellLaunch;
}

/** `bg_` + 10 hex chars: the id form bash's background mode documents. */
export function backgroundShellId(): string {
  return `bg_${randomBytes(5).toString("hex")}`;
}

/**
 * The namespace's first process: starts the command's bash as a child, reports its exit
 * status on fd 3, then (namespace modes) stays alive while daemons the command left
 * behind still run, so `nohup server &` in a background command is not killed the moment
 * the command returns. `kill -0 -1` probes every other process in the namespace but PID 1
 * and the caller; with a network forwarder beside it, /proc is scanned without that one.
 * In a sandbox the script is not PID 1 (bwrap is), so it ignores the SIGTERM of a
 * kill_shell itself (from before the command starts; the command keeps the default) to
 * still report the command's status.
 */
function initScript(scriptFile: string, mode: Isolation["mode"], forwarder: boolean): string {
  const others = forwarder
    ? `__veil_others() { local p; for p in /proc/[0-9]*; do p=\${p#/proc/}; [[ $p == 1 || $p == $$ || $p == "$__veil_fwd" ]] || return 0; done; return 1; }`
    : `__veil_others() { kill -0 -1 2>/dev/null; }`;
  return [
    "exec 2>&1",
    `__veil_fwd=\${${FORWARDER_VARIABLE}:-}; unset ${FORWARDER_VARIABLE}`,
    // Ignoring TERM before the command starts closes a race: a kill_shell that lands
    // between the start and the trap would end the script and lose the command's status.
    // The command's subshell restores the default, which a later exec keeps.
    mode === "sandbox"
      ? `trap '' TERM; (trap - TERM; exec bash --noprofile --norc ${shellQuote(scriptFile)} 3>&-) &`
      : `bash --noprofile --norc ${shellQuote(scriptFile)} 3>&- &`,
    "wait $!; printf '%d\\n' $? >&3; exec 3>&-",
    mode === "process-group" ? "" : `${others}\nwhile __veil_others; do sleep 1; done`,
  ].join("\n");
}

/** A command running on its own, polled by bash_output, stopped by kill_shell. */
export class BackgroundShell {
  readonly tag = randomBytes(8).toString("hex");
  readonly startedAt: string;
  private readonly child: ChildProcess;
  private chunks: Buffer[] = [];
  private unread = 0;
  private total = 0;
  private read = 0;
  private dropped = 0;
  private droppedSincePoll = 0;
  private readonly decoder = new StringDecoder("utf8");
  private status: BackgroundStatus = "running";
  private exitCode: number | null = null;
  private signal: string | null = null;
  private killRequested: NodeJS.Signals | null = null;
  private readonly exited: Promise<void>;
  private waiters: { bytes: number; resolve: () => void }[] = [];
  private markSettled!: () => void;
  /** Resolves when the command's status is final (its exit may precede the namespace's). */
  readonly settled = new Promise<void>((resolve) => (this.markSettled = resolve));

  constructor(private readonly options: BackgroundShellOptions) {
    this.startedAt = new Date(options.clock.now()).toISOString();
    const commandFile = join(options.tempDir, `${options.id}.cmd.sh`);
    const scriptFile = join(options.tempDir, `${options.id}.run.sh`);
    writeFileSync(commandFile, options.command);
    writeFileSync(scriptFile, backgroundScript(commandFile, this.tag, options.snapshotFile));
    const { launched } = options;
    const init = initScript(scriptFile, options.isolation.mode, launched?.forwarder ?? false);
    const argv = [...(launched?.prefix ?? options.isolation.prefix), "bash", "--noprofile", "--norc", "-c", init];
    this.child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd,
      env: launched?.env ?? options.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    this.child.stdout!.on("data", (data: Buffer) => this.onData(data));
    this.child.stderr!.on("data", (data: Buffer) => this.onData(data));
    const status = this.child.stdio[3] as Readable;
    let reported = "";
    // unshare keeps its copy of fd 3 open, so the status line is read, not awaited as EOF.
    status.on("data", (data: Buffer) => {
      reported += data.toString("utf8");
      const line = /^(\d+)\n/.exec(reported);
      if (line) this.settle(Number(line[1]), null);
    });
    this.exited = new Promise((resolve) => {
      const ended = () => void (launched?.close() ?? Promise.resolve()).finally(resolve);
      this.child.once("exit", (code, signal) => {
        this.settle(code, signal);
        ended();
      });
      this.child.once("error", () => {
        this.settle(127, null);
        ended();
      });
    });
  }

  /** Resolves once at least `bytes` of output arrived (or the command's status is final). */
  waitForBytes(bytes: number): Promise<void> {
    if (this.total >= bytes || !this.running) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ bytes, resolve }));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.status === "running";
  }

  state(): BackgroundState {
    return {
      shell_id: this.options.id,
      pid: this.pid,
      command: this.options.command,
      startedAt: this.startedAt,
      status: this.status,
      exitCode: this.exitCode,
      signal: this.signal,
      totalBytes: this.total,
      readBytes: this.read,
      droppedBytes: this.dropped,
    };
  }

  /** Returns only what arrived since the previous poll and moves the cursor past it. */
  poll(maxChars = MAX_OUTPUT_CHARS): BackgroundPoll {
    const bytes = Buffer.concat(this.chunks);
    this.chunks = [];
    this.unread = 0;
    this.read += bytes.length;
    const droppedBytes = this.droppedSincePoll;
    this.droppedSincePoll = 0;
    let text = this.decoder.write(bytes);
    if (!this.running && this.child.stdout!.readableEnded) text += this.decoder.end();
    const omittedChars = Math.max(0, text.length - maxChars);
    return {
      state: this.state(),
      output: omittedChars > 0 ? text.slice(omittedChars) : text,
      newBytes: bytes.length + droppedBytes,
      omittedChars,
      droppedBytes,
    };
  }

  /**
   * SIGTERM to the process group; SIGKILL (whole tree) after the grace period if it is
   * still running. Daemons left behind are removed either way.
   */
  async kill(graceMs = KILL_GRACE_MS): Promise<BackgroundState> {
    if (this.running) {
      this.killRequested = "SIGTERM";
      signalTree(this.target(), "SIGTERM");
      let cancel = () => {};
      const graceOver = new Promise<boolean>((resolve) => (cancel = this.options.clock.setTimer(graceMs, () => resolve(false))));
      const exited = await Promise.race([this.settled.then(() => true), graceOver]);
      cancel();
      if (!exited) this.killRequested = "SIGKILL";
    }
    await this.dispose();
    return this.state();
  }

  /** Kills everything the shell started and waits for the spawned process. */
  async dispose(): Promise<void> {
    if (this.child.pid !== undefined) await killTree(this.target());
    await this.exited;
  }

  private target(): KillTarget {
    return { pid: this.child.pid!, tag: this.tag, mode: this.options.isolation.mode };
  }

  private settle(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.status !== "running") return;
    const byUs = this.killRequested !== null;
    this.status = byUs || signal ? "killed" : "exited";
    this.exitCode = code;
    this.signal = signal ?? (byUs && code !== 0 ? this.killRequested : null);
    this.markSettled();
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
  }

  private onData(data: Buffer): void {
    this.total += data.length;
    if (this.waiters.length > 0) {
      const ready = this.waiters.filter((waiter) => waiter.bytes <= this.total);
      this.waiters = this.waiters.filter((waiter) => waiter.bytes > this.total);
      for (const waiter of ready) waiter.resolve();
    }
    this.chunks.push(data);
    this.unread += data.length;
    while (this.unread > BACKGROUND_BUFFER_BYTES && this.chunks.length > 0) {
      const first = this.chunks[0]!;
      const excess = this.unread - BACKGROUND_BUFFER_BYTES;
      let cut = Math.min(excess, first.length);
      // Drop whole UTF-8 sequences so the kept text starts on a character.
      while (cut < first.length && (first[cut]! & 0xc0) === 0x80) cut++;
      if (cut >= first.length) this.chunks.shift();
      else this.chunks[0] = first.subarray(cut);
      this.unread -= Math.min(cut, first.length);
      this.dropped += Math.min(cut, first.length);
      this.droppedSincePoll += Math.min(cut, first.length);
    }
  }
}
