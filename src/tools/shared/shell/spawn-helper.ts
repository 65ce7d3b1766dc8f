import { fork, spawn, type ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import type { Socket } from "node:net";
import { Readable, Writable } from "node:stream";
import { compiledEntry } from "../compiled-entry.js";

/**
 * Spawning a process forks the one that spawns it: for a server of ~170 MB that is 5–25 ms
 * with its event loop stopped (page tables copied, then a wait until the child has exec'd),
 * and 200 sessions starting their shells at once stall every request for seconds. With the
 * helper on (useSpawnHelper(), which `veil serve` calls), shells are started by a small
 * long-lived Node process (spawn-helper-main.ts) that passes their stdio back over its IPC
 * channel; the server never forks. Without it, or while it cannot be used, shells are
 * spawned directly, as a one-shot `veil run` does.
 */

/** A spawned shell: what PersistentShell uses of a ChildProcess. Emits `exit` (code, signal) and `error`. */
export interface ShellProcess extends EventEmitter {
  readonly pid?: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
}

export interface ShellSpawn {
  file: string;
  args: string[];
  cwd: string;
  /** default: inherited */
  env?: Record<string, string | undefined>;
}

export type HelperRequest = ShellSpawn & { id: number; env: Record<string, string | undefined> };
export type HelperMessage =
  | { id: number; kind: "stdio"; fd: 0 | 1 | 2; pid: number }
  | { id: number; kind: "error"; message: string; code?: string }
  | { id: number; kind: "exit"; code: number | null; signal: NodeJS.Signals | null };

/** Shells always lead their own process group (killTree signals it), with three pipes. */
function spawnDirect(request: ShellSpawn): ShellProcess {
  return spawn(request.file, request.args, { cwd: request.cwd, env: request.env, detached: true, stdio: ["pipe", "pipe", "pipe"] });
}

class HelperShell extends EventEmitter implements ShellProcess {
  constructor(
    readonly pid: number | undefined,
    readonly stdin: Writable,
    readonly stdout: Readable,
    readonly stderr: Readable,
  ) {
    super();
  }
}

/** A spawn that failed in the helper, as a failed direct spawn looks: no pid, empty pipes, an `error` next. */
function failedShell(error: Error): ShellProcess {
  const shell = new HelperShell(undefined, new Writable({ write: (_chunk, _encoding, done) => done() }), Readable.from([]), Readable.from([]));
  // After the caller, which awaits the spawn, has had the chance to listen (a direct spawn emits on the next tick).
  setImmediate(() => shell.emit("error", error));
  return shell;
}

interface Starting {
  request: ShellSpawn;
  sockets: (Socket | undefined)[];
  pid?: number;
  resolve: (shell: ShellProcess) => void;
}

class SpawnHelper {
  readonly child: ChildProcess;
  private seq = 0;
  private readonly starting = new Map<number, Starting>();
  private readonly running = new Map<number, HelperShell>();
  gone = false;

  constructor() {
    // execArgv: [] keeps the server's flags (--cpu-prof, --inspect) off the helper.
    this.child = fork(compiledEntry(import.meta.url, "spawn-helper-main.js"), [], { execArgv: [], stdio: ["ignore", "ignore", "inherit", "ipc"] });
    this.child.on("message", (message: HelperMessage, handle?: Socket) => this.onMessage(message, handle));
    this.child.once("exit", () => this.onGone());
    this.child.once("error", () => this.onGone());
    this.updateRef();
  }

  spawn(request: ShellSpawn): Promise<ShellProcess> {
    const id = ++this.seq;
    return new Promise((resolve) => {
      this.starting.set(id, { request, sockets: [], resolve });
      this.updateRef();
      const message: HelperRequest = { ...request, id, env: request.env ?? process.env };
      this.child.send(message, (error) => {
        if (error) this.fallBack(id);
      });
    });
  }

  private onMessage(message: HelperMessage, handle?: Socket): void {
    const starting = this.starting.get(message.id);
    if (message.kind === "stdio" && starting && handle) {
      starting.sockets[message.fd] = handle;
      starting.pid = message.pid;
      if (message.fd === 0) handle.pause(); // written to, never read
      const [stdin, stdout, stderr] = starting.sockets;
      if (!stdin || !stdout || !stderr) return;
      this.starting.delete(message.id);
      const shell = new HelperShell(message.pid, stdin, stdout, stderr);
      this.running.set(message.id, shell);
      starting.resolve(shell);
    } else if (message.kind === "error" && starting) {
      this.starting.delete(message.id);
      starting.resolve(failedShell(Object.assign(new Error(message.message), { code: message.code })));
    } else if (message.kind === "exit") {
      const shell = this.running.get(message.id);
      this.running.delete(message.id);
      shell?.emit("exit", message.code, message.signal);
    }
    this.updateRef();
  }

  /** The helper died: starts still waiting go direct; running shells (killed with it) are reported gone. */
  private onGone(): void {
    if (this.gone) return;
    this.gone = true;
    for (const id of [...this.starting.keys()]) this.fallBack(id);
    for (const shell of this.running.values()) {
      try {
        if (shell.pid !== undefined) process.kill(-shell.pid, "SIGKILL");
      } catch {
        // already gone
      }
      shell.emit("exit", null, "SIGKILL");
    }
    this.running.clear();
  }

  private fallBack(id: number): void {
    const starting = this.starting.get(id);
    if (!starting) return;
    this.starting.delete(id);
    for (const socket of starting.sockets) socket?.destroy();
    starting.resolve(spawnDirect(starting.request));
  }

  /** Like a ChildProcess, the helper keeps the process alive only while one of its shells starts or runs. */
  private updateRef(): void {
    const busy = this.starting.size + this.running.size > 0;
    const channel = this.child.channel as { ref(): void; unref(): void } | null | undefined;
    if (busy) {
      this.child.ref();
      channel?.ref();
    } else {
      this.child.unref();
      channel?.unref();
    }
  }
}

let helper: SpawnHelper | undefined;
let wanted = false;
/** Helpers that died; past MAX_HELPER_DEATHS shells are spawned directly again (something keeps killing it). */
let deaths = 0;
const MAX_HELPER_DEATHS = 3;

function liveHelper(): SpawnHelper | undefined {
  if (helper?.gone) {
    helper = undefined;
    if (++deaths >= MAX_HELPER_DEATHS) wanted = false;
  }
  if (wanted) helper ??= new SpawnHelper();
  return helper;
}

/**
 * Shells of this process are started by the spawn helper from now on; it is forked here,
 * while the process is still small. A helper that dies is replaced at the next spawn.
 */
export function useSpawnHelper(): void {
  wanted = deaths < MAX_HELPER_DEATHS;
  liveHelper();
}

/** Spawns a shell through the helper when it is in use, else directly. */
export function spawnShellProcess(request: ShellSpawn): Promise<ShellProcess> {
  const spawner = liveHelper();
  return spawner ? spawner.spawn(request) : Promise.resolve(spawnDirect(request));
}

/** The helper's pid while one runs (tests, diagnostics). */
export function spawnHelperPid(): number | undefined {
  return helper && !helper.gone ? helper.child.pid : undefined;
}
