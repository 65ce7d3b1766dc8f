import { spawn, type ChildProcess } from "node:child_process";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** A stdout line longer than this is not a message: the server is dropped. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** Non-JSON bytes on stdout tolerated before the server is dropped (a banner is fine, a flood is not). */
const MAX_NOISE_BYTES = 1024 * 1024;
/** Stderr kept for error messages. */
const STDERR_TAIL_BYTES = 4096;
const KILL_GRACE_MS = 2000;

export interface StdioTransportOptions {
  serverName: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/**
 * Client side of MCP over stdio, written for Veil instead of the SDK's because a
 * server here must never hurt the runtime: the process runs in its own group (so
 * `npx`-style wrappers die with it), stdout lines are capped, non-JSON output is
 * counted and reported by server name rather than thrown, and stderr is kept so
 * a crash can say why.
 */
export class VeilStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcess | null = null;
  private buffer: Buffer[] = [];
  private bufferedBytes = 0;
  private noiseBytes = 0;
  private firstNoise: string | null = null;
  private stderrTail = "";
  private exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private failure: string | null = null;
  /** close() was called: the exit that follows is ours, not a crash. */
  private closing = false;
  private exited: Promise<void> = Promise.resolve();

  constructor(private readonly options: StdioTransportOptions) {}

  /** Why the transport ended or misbehaved, phrased for the user; null while healthy. */
  describeFailure(): string | null {
    const parts: string[] = [];
    if (this.failure) parts.push(this.failure);
    else if (this.exit && !this.closing) parts.push(this.exit.signal ? `exited on signal ${this.exit.signal}` : `exited with code ${this.exit.code}`);
    if (this.firstNoise && !this.failure) parts.push(`it wrote non-JSON to stdout (first line: ${JSON.stringify(this.firstNoise)}); an MCP stdio server must print only JSON-RPC messages and log to stderr`);
    const stderr = this.stderrTail.trim();
    if (stderr && ((this.exit && !this.closing) || this.failure)) parts.push(`stderr: ${stderr.slice(-600)}`);
    return parts.length ? parts.join("; ") : null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.options.command, this.options.args, {
        cwd: this.options.cwd,
        env: this.options.env,
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
      this.child = child;
      this.exited = new Promise((done) => child.once("close", () => done()));
      child.once("error", (error) => {
        this.failure = `could not be started: ${error.message}`;
        reject(new Error(`${this.options.command}: ${error.message}`));
      });
      child.once("spawn", () => resolve());
      child.once("close", (code, signal) => {
        this.exit = { code, signal };
        this.child = null;
        this.onclose?.();
      });
      child.stdin!.on("error", () => {
        // EPIPE after the server exited: reported through close.
      });
      child.stdout!.on("data", (chunk: Buffer) => this.onStdout(chunk));
      child.stderr!.on("data", (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_BYTES);
      });
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) throw new Error(`MCP server "${this.options.serverName}" is not running`);
    const text = JSON.stringify(message) + "\n";
    if (!stdin.write(text)) await new Promise<void>((resolve) => stdin.once("drain", resolve));
  }

  /** Ends stdin, then SIGTERM, then SIGKILL to the whole process group. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.closing = true;
    child.stdin?.end();
    if (await this.waitExit(KILL_GRACE_MS)) return;
    this.signalGroup(child, "SIGTERM");
    if (await this.waitExit(KILL_GRACE_MS)) return;
    this.signalGroup(child, "SIGKILL");
    await this.waitExit(KILL_GRACE_MS);
  }

  /** SIGKILL to the group at once: for a server that never became usable. */
  kill(): void {
    this.closing = true;
    if (this.child) this.signalGroup(this.child, "SIGKILL");
  }

  private waitExit(ms: number): Promise<boolean> {
    if (!this.child) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      timer.unref();
      void this.exited.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      child.kill(signal);
    }
  }

  private onStdout(chunk: Buffer): void {
    let start = 0;
    for (let index = chunk.indexOf(10); index !== -1; index = chunk.indexOf(10, start)) {
      this.buffer.push(chunk.subarray(start, index));
      const line = Buffer.concat(this.buffer).toString("utf8");
      this.buffer = [];
      this.bufferedBytes = 0;
      start = index + 1;
      this.onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
      if (!this.child) return;
    }
    if (start < chunk.length) {
      this.buffer.push(chunk.subarray(start));
      this.bufferedBytes += chunk.length - start;
      if (this.bufferedBytes > MAX_LINE_BYTES) this.abandon(`wrote a stdout line longer than ${MAX_LINE_BYTES} bytes without a newline`);
    }
  }

  private onLine(line: string): void {
    if (line.trim() === "") return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return this.noise(line);
    }
    const message = JSONRPCMessageSchema.safeParse(parsed);
    if (!message.success) return this.noise(line);
    this.onmessage?.(message.data);
  }

  private noise(line: string): void {
    this.firstNoise ??= line.slice(0, 200);
    this.noiseBytes += line.length + 1;
    if (this.noiseBytes === line.length + 1) this.onerror?.(new Error(`MCP server "${this.options.serverName}" wrote non-JSON to stdout: ${JSON.stringify(this.firstNoise)}`));
    if (this.noiseBytes > MAX_NOISE_BYTES) {
      this.abandon(`flooded stdout with non-JSON output (over ${MAX_NOISE_BYTES} bytes; first line: ${JSON.stringify(this.firstNoise)}); an MCP stdio server must print only JSON-RPC messages and log to stderr`);
    }
  }

  private abandon(reason: string): void {
    if (this.failure) return;
    this.failure = reason;
    this.buffer = [];
    this.bufferedBytes = 0;
    const child = this.child;
    if (child) {
      child.stdout?.removeAllListeners("data");
      this.signalGroup(child, "SIGKILL");
    }
  }
}
