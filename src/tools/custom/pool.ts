import { fork, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { ToolError } from "../../errors.js";
import type { Disposable, Logger } from "../types.js";
import { PROXY_SOCKET_ARG, serializeError, type CallContext, type ChildMessage, type ParentMessage, type RpcMethod, type SerializedError } from "./protocol.js";
import type { Sandbox } from "../shared/sandbox/sandbox.js";
import type { ProxyListener } from "../shared/sandbox/proxy.js";

export interface ChildPoolOptions {
  /** The compiled child entry (dist/src/tools/custom/child-main.js). */
  runnerPath: string;
  /** Working directory of tool processes (the workspace). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  log: Logger;
  /** Heap cap of a tool process; a leaking tool dies alone. default: 512 */
  maxOldSpaceMb?: number;
  /** Idle processes kept ready so a call does not pay for a Node start. default: 1 */
  warm?: number;
  /** Processes running at once; further calls wait. default: 16 */
  maxChildren?: number;
  /** Every tool process runs inside this sandbox (bubblewrap is what fork() starts; env is then the sandbox's). */
  sandbox?: Sandbox;
}

export interface RunRequest {
  toolName: string;
  file: string;
  version: string;
  input: Record<string, unknown>;
  context: CallContext;
  timeoutMs: number;
  signal: AbortSignal;
  onChunk(chunk: string): void;
  /** Serves the child's requests (remote methods, LLM calls); `push` streams partial text back. */
  onRpc(method: RpcMethod, params: Record<string, unknown>, push: (text: string) => void, signal: AbortSignal): Promise<unknown>;
  /** The sandbox's allowlist proxy refused a request of this call. */
  onBlocked?(host: string, port: number): void;
}

const STDERR_TAIL = 2000;
/** How long a killed call waits for its process to be reaped before answering anyway. */
const KILL_WAIT_MS = 2000;

/** One tool process. Runs one call at a time. */
class Worker {
  readonly ready: Promise<void>;
  /** Resolves once the process has exited and been reaped. */
  readonly exited: Promise<void>;
  dead = false;
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  stderrTail = "";
  /** The call running on this process (its refused proxy requests are reported to it). */
  current?: RunRequest;

  constructor(
    readonly child: ChildProcess,
    proxy?: Promise<ProxyListener>,
    /** The child leads its own process group (a sandbox: bwrap, its PID 1 and the tool), killed as one. */
    private readonly group = false,
  ) {
    const started = new Promise<void>((resolve, reject) => {
      const onMessage = (message: ChildMessage) => {
        if (message?.t !== "ready") return;
        child.off("message", onMessage);
        child.off("exit", onExit);
        resolve();
      };
      const onExit = () => reject(new ToolError("TOOL_ERROR", `the custom tool process exited while starting${this.stderrTail ? `: ${this.stderrTail.trim()}` : ""}`));
      child.on("message", onMessage);
      child.once("exit", onExit);
    });
    this.ready = proxy ? Promise.all([started, proxy]).then(() => undefined) : started;
    this.ready.catch(() => undefined);
    this.exited = new Promise<void>((resolve) => {
      child.once("exit", (code, signal) => {
        this.dead = true;
        this.exit = { code, signal };
        void proxy?.then((listener) => listener.close()).catch(() => undefined);
        resolve();
      });
    });
    child.stderr?.on("data", (data: Buffer) => {
      this.stderrTail = (this.stderrTail + data.toString("utf8")).slice(-STDERR_TAIL);
    });
  }

  /** SIGKILL; resolves when the process is gone (or after a short cap if it will not say so). */
  kill(): Promise<void> {
    if (!this.dead) {
      this.dead = true;
      // A bwrap killed while it sets the sandbox up can leave its PID 1 waiting for it forever: the group goes together.
      if (this.group && this.child.pid !== undefined) killGroup(this.child.pid);
      else this.child.kill("SIGKILL");
    }
    if (this.exit) return Promise.resolve();
    // Keep the event loop alive until the exit is seen (an idle process is unref'd).
    this.child.ref();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, KILL_WAIT_MS);
      void this.exited.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Lets the server exit while this process idles. */
  setIdle(idle: boolean): void {
    const channel = this.child.channel as { ref?(): void; unref?(): void } | null | undefined;
    if (idle) {
      this.child.unref();
      channel?.unref?.();
    } else {
      this.child.ref();
      channel?.ref?.();
    }
  }
}

/**
 * Warm child processes that run custom tools out of the server process. A call
 * takes an idle process (or starts one), runs, and gives it back; a process that
 * crashed, timed out or was aborted is killed and replaced in the background.
 */
export class ChildPool implements Disposable {
  private readonly idle: Worker[] = [];
  private readonly all = new Set<Worker>();
  private readonly waiters: Array<() => void> = [];
  private busy = 0;
  private seq = 0;
  private spawned = 0;
  private closed = false;
  private readonly warm: number;
  private readonly maxChildren: number;

  constructor(private readonly options: ChildPoolOptions) {
    if (!existsSync(options.runnerPath)) {
      throw new ToolError("TOOL_CONTEXT_INVALID", `the custom tool runner ${options.runnerPath} does not exist; build the project first (npm run build)`);
    }
    this.warm = options.warm ?? 1;
    this.maxChildren = options.maxChildren ?? 16;
  }

  /** Starts idle processes up to the warm count. */
  prewarm(): void {
    while (!this.closed && this.idle.length < this.warm && this.all.size < this.maxChildren) this.idle.push(this.spawn());
  }

  /** Process ids of the live tool processes (for tests and diagnostics). */
  pids(): number[] {
    return [...this.all].filter((w) => !w.dead).map((w) => w.child.pid ?? -1);
  }

  async run(request: RunRequest): Promise<unknown> {
    const worker = await this.acquire(request.signal);
    worker.current = request;
    try {
      return await this.runOn(worker, request);
    } finally {
      worker.current = undefined;
      this.release(worker, !worker.dead);
    }
  }

  async dispose(): Promise<void> {
    this.closed = true;
    const kills = [...this.all].map((worker) => worker.kill());
    this.all.clear();
    this.idle.length = 0;
    for (const wake of this.waiters.splice(0)) wake();
    await Promise.all(kills);
  }

  private spawn(): Worker {
    const heap = `--max-old-space-size=${this.options.maxOldSpaceMb ?? 512}`;
    const { sandbox } = this.options;
    const name = `tool-${process.pid}-${++this.spawned}`;
    let worker: Worker;
    const proxy =
      sandbox?.network === "allowlist"
        ? sandbox.openProxy(name, (host, port) => {
            if (worker.current?.onBlocked) worker.current.onBlocked(host, port);
            else this.options.log.warn("the sandbox proxy refused a request of an idle custom tool process", { host, port });
          })
        : undefined;
    const child = sandbox
      ? // bubblewrap is the program fork() starts; it runs node with the runner inside the sandbox
        // (the IPC channel's descriptor passes through), and dies with the server (--die-with-parent).
        fork(this.options.runnerPath, proxy ? [`${PROXY_SOCKET_ARG}${sandbox.proxySocketPath(name)}`] : [], {
          cwd: this.options.cwd,
          detached: true,
          env: sandbox.env(),
          execPath: sandbox.argv()[0],
          execArgv: [...sandbox.argv().slice(1), process.execPath, heap],
          stdio: ["ignore", "pipe", "pipe", "ipc"],
          serialization: "json",
        })
      : fork(this.options.runnerPath, [], {
          cwd: this.options.cwd,
          // The child exits when its parent pid changes (the server died; see child-main.ts).
          env: { ...this.options.env, VEIL_PARENT_PID: String(process.pid) },
          execArgv: [heap],
          stdio: ["ignore", "pipe", "pipe", "ipc"],
          serialization: "json",
        });
    worker = new Worker(child, proxy, sandbox !== undefined);
    this.all.add(worker);
    const pid = child.pid;
    child.stdout?.on("data", (data: Buffer) => this.options.log.debug("custom tool stdout", { pid, text: data.toString("utf8").slice(0, 2000) }));
    child.stderr?.on("data", (data: Buffer) => this.options.log.debug("custom tool stderr", { pid, text: data.toString("utf8").slice(0, 2000) }));
    (child.stdout as { unref?(): void } | null)?.unref?.();
    (child.stderr as { unref?(): void } | null)?.unref?.();
    child.on("error", (error) => this.options.log.warn("custom tool process error", { pid, error: error.message }));
    child.on("message", (message: ChildMessage) => {
      if (message?.t === "stray") this.options.log.warn("an error escaped a finished custom tool call (the process carries on)", { pid, error: message.error.message, stack: message.error.stack });
    });
    child.once("exit", () => {
      this.all.delete(worker);
      const index = this.idle.indexOf(worker);
      if (index >= 0) this.idle.splice(index, 1);
    });
    worker.setIdle(true);
    return worker;
  }

  private async acquire(signal: AbortSignal): Promise<Worker> {
    for (;;) {
      if (this.closed) throw new ToolError("CANCELLED", "the runtime is shutting down");
      if (signal.aborted) throw signal.reason;
      const worker = this.idle.pop();
      if (worker && !worker.dead) {
        this.busy++;
        return worker;
      }
      if (!worker && this.busy < this.maxChildren) {
        this.busy++;
        return this.spawn();
      }
      if (!worker) await this.waitForSlot(signal);
    }
  }

  private waitForSlot(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        signal.removeEventListener("abort", wake);
        resolve();
      };
      this.waiters.push(wake);
      signal.addEventListener("abort", wake, { once: true });
    });
  }

  private release(worker: Worker, healthy: boolean): void {
    this.busy--;
    if (!healthy || worker.dead || this.closed || this.idle.length >= Math.max(this.warm, 2)) {
      void worker.kill();
    } else {
      worker.setIdle(true);
      this.idle.push(worker);
    }
    this.waiters.shift()?.();
    // Replace what was lost so the next call finds a warm process.
    if (!this.closed) setImmediate(() => this.prewarm());
  }

  private async runOn(worker: Worker, request: RunRequest): Promise<unknown> {
    worker.setIdle(false);
    const { child } = worker;
    const name = request.toolName;
    await raceReady(worker, request.signal);
    const id = ++this.seq;
    worker.stderrTail = "";
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      const rpcAbort = new AbortController();
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        request.signal.removeEventListener("abort", onAbort);
        child.off("message", onMessage);
        child.off("exit", onExit);
        rpcAbort.abort(new ToolError("CANCELLED", `custom tool "${name}" call ended`));
        fn();
      };
      /** Stops the process, then answers: when the call returns, the tool is gone. */
      const killThen = (error: () => unknown) => {
        if (settled) return;
        settle(() => undefined);
        void worker.kill().then(() => reject(error()));
      };
      const send = (message: ParentMessage) => {
        if (!worker.dead && child.connected) child.send(message, (error) => error && this.options.log.debug("custom tool send failed", { error: error.message }));
      };
      const onMessage = (message: ChildMessage) => {
        if (!message || message.t === "ready" || message.t === "stray" || message.id !== id) return;
        switch (message.t) {
          case "result":
            settle(() => (message.ok ? resolve(message.value) : reject(childError(name, message.error))));
            return;
          case "chunk":
            request.onChunk(String(message.chunk));
            return;
          case "fatal":
            killThen(() => childError(name, message.error));
            return;
          case "rpc": {
            const rpcId = message.rpcId;
            request
              .onRpc(message.method, message.params ?? {}, (text) => send({ t: "rpc-chunk", id, rpcId, text }), rpcAbort.signal)
              .then(
                (value) => send({ t: "rpc-result", id, rpcId, ok: true, value }),
                (error: unknown) => send({ t: "rpc-result", id, rpcId, ok: false, error: serializeError(error) }),
              );
            return;
          }
        }
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        const tail = worker.stderrTail.trim();
        const oom = /heap limit|out of memory/i.test(tail);
        const how = signal ? `killed by ${signal}` : `exit code ${code}`;
        const detail = oom ? " — it ran out of memory" : tail ? `; stderr: ${tail.split("\n").slice(-3).join(" | ")}` : "";
        settle(() => reject(new ToolError("TOOL_ERROR", `custom tool "${name}" ended its process (${how}) before returning a result${detail}`)));
      };
      const onAbort = () => killThen(() => request.signal.reason ?? new ToolError("CANCELLED", `custom tool "${name}" was cancelled`));
      const timer = setTimeout(() => {
        const seconds = request.timeoutMs / 1000;
        killThen(() => new ToolError("TOOL_TIMEOUT", `custom tool "${name}" did not finish within ${seconds} s (tool.json "timeout"); its process was killed`));
      }, request.timeoutMs);
      child.on("message", onMessage);
      child.once("exit", onExit);
      request.signal.addEventListener("abort", onAbort, { once: true });
      if (request.signal.aborted) return onAbort();
      if (worker.dead) return onExit(worker.exit?.code ?? null, worker.exit?.signal ?? null);
      send({ t: "call", id, file: request.file, version: request.version, input: request.input, context: request.context });
    });
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

async function raceReady(worker: Worker, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw signal.reason;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      worker.ready,
      new Promise<never>((_, reject) => {
        onAbort = () => {
          void worker.kill();
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

function childError(name: string, error: SerializedError): ToolError {
  const code = error.code === "TOOL_CONTEXT_INVALID" ? "TOOL_CONTEXT_INVALID" : "TOOL_ERROR";
  const kind = error.name && error.name !== "Error" ? `${error.name}: ` : "";
  return new ToolError(code, `custom tool "${name}" failed: ${kind}${error.message}`, { details: { stack: error.stack } });
}
