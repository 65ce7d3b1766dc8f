import type { Runtime } from "./runtime.js";
import { installMultiAgent } from "./core/agents/install.js";
import { installRemoteMethods } from "./core/remote-methods.js";
import { installStreamTokens } from "./core/stream-tokens.js";
import { installWakeups } from "./core/wakeups.js";

/**
 * A feature wires its services into a fresh runtime (ctx.services for tools,
 * session listeners, timers) and returns what to dispose at shutdown.
 */
export type Feature = (runtime: Runtime) => void | Promise<void>;

/** Every feature, in install order. Each issue adds its own line. */
export const FEATURES: readonly Feature[] = [installWakeups, installRemoteMethods, installStreamTokens, installMultiAgent];
