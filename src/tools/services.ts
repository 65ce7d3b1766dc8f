import type { LlmClient } from "../llm/types.js";
import type { WakeupRowWrites } from "./types.js";
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
  /** `rows`: where the session's row is written (a run's tool passes its own, so a run that lost the session writes none). */
  arm(sessionId: string, input: { time: string | number; message?: string; loop?: boolean }, rows?: WakeupRowWrites): Promise<{ time: string; message: string; loop: boolean; nextFireAt: string; intervalMs: number } | null>;
  cancel(sessionId: string, rows?: WakeupRowWrites): Promise<boolean>;
  get(sessionId: string): Promise<unknown>;
}

/**
 * The server's own address: unknown until it listens (and in `veil run`, which never does).
 * The runtime holds one from its start; the server sets it once it has its port.
 */
export class SelfAddress {
  private value: { host: string; port: number } | undefined;

  constructor(initial?: { host: string; port: number }) {
    this.value = initial;
  }

  set(host: string, port: number): void {
    this.value = { host, port };
  }

  get(): { host: string; port: number } | undefined {
    return this.value;
  }
}

/**
 * A service a layer above tools adds for its own tools (core/agents adds the multi-agent
 * service its agent_* tools use). The key carries the service's type, so the layer that
 * defines the key and its tools agree on it without this layer knowing the type.
 */
export interface ServiceKey<T> {
  readonly name: string;
  /** Never set: only carries T. */
  readonly type?: T;
}

export function serviceKey<T>(name: string): ServiceKey<T> {
  return { name };
}

/**
 * The services tools reach through `ctx.services`, declared here (below the layers that
 * implement them). The runtime builds them whole, once, before any run: nothing is added
 * later. Services of the layers above come in through `extensions`, by key.
 */
export interface ToolServices {
  wakeups?: WakeupScheduler;
  remoteMethods?: RemoteMethods;
  /** For tools that call the model themselves. */
  llm?: LlmClient;
  /** The current run's toolset (tool_search, tool_activate). */
  toolset?: SessionToolset;
  /** The server's own address, refused by web_fetch even when its host is allowed. */
  selfAddress?: SelfAddress;
  /** Shell knobs for tests and embedders. */
  shell?: ShellServiceOptions;
  /** null forces the pure-Node grep/glob; a string names the rg binary. */
  ripgrepPath?: string | null;
  /**
   * A literal grep over at most this many files (and 2 MB) runs in process even when rg is
   * there: starting rg costs more than such a search. default: 200; 0 always runs rg.
   */
  grepInProcessFiles?: number;
  /** Services of the layers above, by key (see ServiceKey). */
  extensions?: ReadonlyMap<ServiceKey<unknown>, unknown>;
}

/** The service under `key`, or undefined when the runtime has none. */
export function extensionOf<T>(services: ToolServices, key: ServiceKey<T>): T | undefined {
  return services.extensions?.get(key) as T | undefined;
}
