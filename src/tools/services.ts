import type { LlmClient } from "../llm/types.js";
import type { SessionToolset } from "./registry.js";
import type { RemoteMethods } from "./custom/remote-methods.js";
import type { ShellServiceOptions } from "./shared/shell/session-shells.js";

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
