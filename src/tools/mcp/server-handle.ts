import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { ToolError } from "../../errors.js";
import type { McpServerSpec } from "./config.js";
import type { CallToolResult, McpConnection } from "./connection.js";

/** Consecutive crashes restarted automatically; past that the server waits for the next call. */
const MAX_AUTO_RESTARTS = 5;
/** A call waits this long at most for a pending restart slot before failing. */
const MAX_CALL_WAIT_MS = 5_000;
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_CAP_MS = 60_000;

export type ServerState = "idle" | "starting" | "ready" | "broken";

export interface ServerHandleDeps {
  env: NodeJS.ProcessEnv;
  clock: Clock;
  log: Logger;
}

type ConnectionModule = typeof import("./connection.js");
let connectionModule: Promise<ConnectionModule> | undefined;
/** The SDK is loaded here, on the first server start of the process. */
const loadConnectionModule = () => (connectionModule ??= import("./connection.js"));

/**
 * One configured MCP server over its life: started on first need, shared by every
 * session, restarted with backoff after a crash, closed with the runtime. Never
 * throws from discovery; a call fails with a ToolError that names the server.
 */
export class McpServerHandle {
  /** The last tools/list answer (kept while the server is down, so calls can say why they fail). */
  tools: unknown[] | null = null;
  /** Bumped when `tools` changes, so adapters rebuild only then. */
  toolsVersion = 0;
  private connection: McpConnection | null = null;
  private starting: Promise<McpConnection> | null = null;
  private error: string | null = null;
  private failures = 0;
  private retryAt = 0;
  private toolsStale = true;
  private cancelRestart: (() => void) | null = null;
  private disposed = false;

  constructor(
    readonly spec: McpServerSpec,
    private readonly deps: ServerHandleDeps,
  ) {}

  get state(): ServerState {
    if (this.connection) return "ready";
    if (this.starting) return "starting";
    return this.error ? "broken" : "idle";
  }

  /** Why the server is unusable, or null. */
  get lastError(): string | null {
    return this.connection ? null : this.error;
  }

  get pid(): number | undefined {
    return this.connection?.pid;
  }

  /**
   * Makes sure the tool list is known. The first start is awaited (the tools are
   * needed for this very run); a later restart runs in the background so a dead
   * server never stalls anyone's turn.
   */
  async refreshTools(): Promise<void> {
    if (this.disposed) return;
    if (this.connection && !this.toolsStale) return;
    if (!this.connection && !this.starting && this.failures > 0 && this.deps.clock.now() < this.retryAt) return;
    // Wait for a first start (the tools are needed now) or a re-list of a live server.
    const wait = this.connection !== null || (this.tools === null && this.failures === 0);
    const work = this.loadTools().catch(() => undefined);
    if (wait) await work;
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult> {
    const connection = await this.connectForCall(tool, signal);
    const timeoutMs = this.spec.callTimeoutMs;
    // The SDK never removes its abort listener: give it a per-call signal so a long-lived one does not collect them.
    const local = new AbortController();
    const forward = () => local.abort(signal.reason);
    signal.addEventListener("abort", forward, { once: true });
    try {
      const result = await connection.callTool(tool, args, { signal: local.signal, timeoutMs });
      this.failures = 0;
      return result;
    } catch (error) {
      if (signal.aborted) throw error;
      const { classifyFailure } = await loadConnectionModule();
      const failure = classifyFailure(error);
      const name = this.spec.name;
      if (failure.kind === "timeout") throw new ToolError("TOOL_TIMEOUT", `MCP server "${name}" did not answer tools/call "${tool}" within ${timeoutMs / 1000} s`);
      if (failure.kind === "server") throw new ToolError("TOOL_ERROR", `MCP server "${name}" refused tools/call "${tool}": ${failure.message}`);
      const why = connection.describeFailure() ?? failure.message;
      this.onConnectionLost(connection, why);
      throw new ToolError("TOOL_ERROR", `MCP server "${name}" failed during tools/call "${tool}": ${why}. It is restarted automatically; retry the call.`);
    } finally {
      signal.removeEventListener("abort", forward);
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.cancelRestart?.();
    const connection = this.connection;
    this.connection = null;
    const starting = this.starting;
    await connection?.close();
    if (starting) await starting.then((c) => c.close()).catch(() => undefined);
  }

  private async loadTools(): Promise<void> {
    const connection = await this.connect();
    try {
      const tools = await connection.listTools(this.spec.startupTimeoutMs);
      this.toolsStale = false;
      this.failures = 0;
      if (JSON.stringify(tools) !== JSON.stringify(this.tools)) {
        this.tools = tools;
        this.toolsVersion++;
      }
    } catch (error) {
      const { classifyFailure } = await loadConnectionModule();
      const failure = classifyFailure(error);
      const why = connection.describeFailure() ?? `tools/list failed: ${failure.kind === "timeout" ? `no answer within ${this.spec.startupTimeoutMs / 1000} s` : failure.message}`;
      this.onConnectionLost(connection, why);
      throw error;
    }
  }

  private async connectForCall(tool: string, signal: AbortSignal): Promise<McpConnection> {
    if (this.connection) return this.connection;
    const wait = this.retryAt - this.deps.clock.now();
    if (!this.starting && wait > MAX_CALL_WAIT_MS) {
      throw new ToolError("TOOL_ERROR", `MCP server "${this.spec.name}" is down (${this.error ?? "not started"}); next start attempt in ${Math.ceil(wait / 1000)} s, so "${tool}" cannot run now`);
    }
    if (!this.starting && wait > 0) await this.deps.clock.sleep(wait, signal);
    try {
      return await this.connect();
    } catch (error) {
      throw new ToolError("TOOL_ERROR", `MCP server "${this.spec.name}" is not available: ${(error as Error).message}`, { cause: error });
    }
  }

  private connect(): Promise<McpConnection> {
    if (this.connection) return Promise.resolve(this.connection);
    if (this.starting) return this.starting;
    if (this.disposed) return Promise.reject(new Error("the runtime is shutting down"));
    const started = this.open().then(
      (connection) => {
        this.starting = null;
        if (this.disposed) {
          void connection.close();
          throw new Error("the runtime is shutting down");
        }
        this.connection = connection;
        this.error = null;
        this.toolsStale = true;
        this.deps.log.info(`MCP server "${this.spec.name}" started`, { server: this.spec.name, pid: connection.pid });
        return connection;
      },
      (error: unknown) => {
        this.starting = null;
        this.recordFailure((error as Error).message);
        throw error;
      },
    );
    this.starting = started;
    return started;
  }

  private async open(): Promise<McpConnection> {
    const { openConnection } = await loadConnectionModule();
    let connection: McpConnection | null = null;
    connection = await openConnection(this.spec, {
      env: this.deps.env,
      timeoutMs: this.spec.startupTimeoutMs,
      onClosed: () => {
        if (connection) this.onConnectionLost(connection, connection.describeFailure() ?? "the connection closed");
      },
      onToolsChanged: () => {
        this.toolsStale = true;
      },
      onNoise: (message) => this.deps.log.warn(message, { server: this.spec.name }),
    });
    return connection;
  }

  /** A live connection dropped: forget it and schedule a restart with backoff. */
  private onConnectionLost(connection: McpConnection, why: string): void {
    if (this.connection !== connection) return;
    this.connection = null;
    void connection.close();
    this.recordFailure(why);
    if (this.disposed || this.failures > MAX_AUTO_RESTARTS) return;
    this.cancelRestart?.();
    this.cancelRestart = this.deps.clock.setTimer(Math.max(0, this.retryAt - this.deps.clock.now()), () => {
      this.cancelRestart = null;
      if (!this.disposed && !this.connection && !this.starting) void this.loadTools().catch(() => undefined);
    });
  }

  private recordFailure(why: string): void {
    this.failures++;
    this.error = why;
    this.retryAt = this.deps.clock.now() + Math.min(BACKOFF_BASE_MS * 2 ** (this.failures - 1), BACKOFF_CAP_MS);
    this.deps.log.warn(`MCP server "${this.spec.name}": ${why}`, { server: this.spec.name, failures: this.failures });
  }
}
