import type { LlmClient } from "../llm/types.js";
import type { SessionToolset } from "./registry.js";
import type { RemoteMethods } from "./custom/remote-methods.js";

/**
 * Optional knobs under `ctx.services.shell` (tests and embedders):
 * - `isolation: "process-group"` forces the fallback even where PID namespaces work;
 * - `loadBashrc: false` skips ~/.bashrc;
 * - `env` replaces the inherited environment (e.g. a test's HOME with its own .bashrc).
 */
export interface ShellServiceOptions {
  isolation?: "auto" | "process-group";
  loadBashrc?: boolean;
  /** Full environment for spawned shells; default: inherited from the runtime's process. */
  env?: Record<string, string | undefined>;
}

/** What `schedule_wakeup` needs from the runtime's wake-up service (core/wakeups.ts implements it). */
export interface WakeupScheduler {
  arm(sessionId: string, input: { time: string | number; message?: string; loop?: boolean }): Promise<{ time: string; message: string; loop: boolean; nextFireAt: string; intervalMs: number } | null>;
  cancel(sessionId: string): Promise<boolean>;
  get(sessionId: string): Promise<unknown>;
}

/**
 * The services tools reach through `ctx.services`, declared here (below the layers that
 * implement them) and filled in by the runtime. Layers above may add their own entries by
 * declaration merging (core/agents adds `multiAgent`), so no tool reads an untyped bag.
 */
export interface ToolServices {
  wakeups?: WakeupScheduler;
  remoteMethods?: RemoteMethods;
  /** For tools that call the model themselves. */
  llm?: LlmClient;
  /** The current run's toolset (tool_search, tool_activate). */
  toolset?: SessionToolset;
  /** The server's own address, refused by web_fetch even when its host is allowed. */
  selfAddress?: { host: string; port: number };
  /** Shell knobs for tests and embedders. */
  shell?: ShellServiceOptions;
  /** null forces the pure-Node grep/glob; a string names the rg binary. */
  ripgrepPath?: string | null;
}
