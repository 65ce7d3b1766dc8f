import { spawn, type ChildProcess } from "node:child_process";
import type { SpawnedProcess, SpawnOptions } from "@anthropic-ai/claude-agent-sdk";

/** Lines of a child's stderr kept for error messages. */
const STDERR_TAIL_LINES = 20;

/** How long a child gets after SIGTERM before its process group is killed. */
const KILL_GRACE_MS = 2000;

/**
 * The `claude` processes of this engine. Each runs in its own process group, so
 * ending it also ends what it started (its shells), and a run's end, a cancel, a
 * session close or a shutdown can each end them for sure.
 */
export class ClaudeProcesses {
  private readonly live = new Map<number, ChildProcess>();

  spawn(options: SpawnOptions, onStderr: (line: string) => void, onSpawn: (pid: number) => void = () => {}): SpawnedProcess {
    const child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    const pid = child.pid;
    if (pid !== undefined) {
      this.live.set(pid, child);
      child.once("exit", () => this.live.delete(pid));
      onSpawn(pid);
    }
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      for (const line of chunk.split("\n")) if (line.trim() !== "") onStderr(line);
    });
    const onAbort = () => this.end(child);
    options.signal.addEventListener("abort", onAbort, { once: true });
    child.once("exit", () => options.signal.removeEventListener("abort", onAbort));
    let groupKilled = false;
    return {
      stdin: child.stdin!,
      stdout: child.stdout!,
      get killed() {
        return child.killed || groupKilled;
      },
      get exitCode() {
        return child.exitCode;
      },
      get signalCode() {
        return child.signalCode;
      },
      kill: (signal) => {
        groupKilled = true;
        return signalGroup(child, signal);
      },
      on: (event: "exit" | "error", listener: (...args: any[]) => void) => void child.on(event, listener),
      once: (event: "exit" | "error", listener: (...args: any[]) => void) => void child.once(event, listener),
      off: (event: "exit" | "error", listener: (...args: any[]) => void) => void child.off(event, listener),
    } as SpawnedProcess;
  }

  /** SIGTERM to the group, SIGKILL after a grace; resolves when the child has exited. */
  end(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) {
      signalGroup(child, "SIGKILL"); // its group may outlive it
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => signalGroup(child, "SIGKILL"), KILL_GRACE_MS);
      timer.unref();
      child.once("exit", () => {
        clearTimeout(timer);
        signalGroup(child, "SIGKILL");
        resolve();
      });
      signalGroup(child, "SIGTERM");
    });
  }

  /** Ends these children if still alive (the end of the run that started them). */
  async endPids(pids: readonly number[]): Promise<void> {
    await Promise.all(pids.map((pid) => this.live.get(pid)).filter((c): c is ChildProcess => c !== undefined).map((child) => this.end(child)));
  }

  /** Ends every live child (shutdown). */
  async endAll(): Promise<void> {
    await Promise.all([...this.live.values()].map((child) => this.end(child)));
  }

  pids(): number[] {
    return [...this.live.keys()];
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, signal);
    return true;
  } catch {
    try {
      return child.kill(signal);
    } catch {
      return false;
    }
  }
}

/** Keeps the last lines of a child's stderr. */
export class StderrTail {
  private readonly lines: string[] = [];

  push(line: string): void {
    this.lines.push(line);
    if (this.lines.length > STDERR_TAIL_LINES) this.lines.shift();
  }

  text(): string {
    return this.lines.join("\n");
  }
}
