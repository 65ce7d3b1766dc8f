/**
 * The `veilcli` package: what custom tools and embedders import
 * (`require('veilcli')` works from a tool folder). HTTP clients import
 * `veilcli/client` instead, which carries no server code.
 */
import type { VeilEvent } from "./base/events.js";
import type { RunResult } from "./engines/types.js";
import { compileOutputSchema } from "./engines/output-schema.js";
import { createRuntime, type Runtime, type RuntimeOptions } from "./runtime.js";
import type { SessionRow } from "./store/store.js";

export { callWithProviderFallback, extractMessage } from "./llm/provider-api.js";
export type { CallWithProviderFallbackOptions, ExtractedMessage } from "./llm/provider-api.js";
export { createRuntime } from "./runtime.js";
export type { Runtime, RuntimeOptions } from "./runtime.js";
export { startServer } from "./server/listen.js";
export { createApp } from "./server/app.js";
export { loadConfig } from "./config/load.js";
export { defineTool } from "./tools/define.js";
export { VeilError, ToolError, ERROR_STATUS } from "./errors.js";
export type { ErrorCode } from "./errors.js";
export type { VeilEvent, VeilEventBody, EventBus } from "./base/events.js";
export type { Store } from "./store/store.js";
export type { ToolContext, ToolOutcome, RegisteredTool } from "./tools/types.js";
export type { RunResult } from "./engines/types.js";
export type { SessionRow } from "./store/store.js";
export { VERSION } from "./version.js";

/** Veil in process, for scripts: sessions and turns without a server. */
export interface Veil {
  /** The whole runtime (store, bus, sessions, config) for anything beyond the basics. */
  runtime: Runtime;
  /** A new session (agent default: "default"). */
  createSession(options?: { agent?: string; model?: string }): Promise<SessionRow>;
  /**
   * Runs one turn in a session and resolves with its result; `onEvent` sees the turn's events as
   * they happen. With `outputSchema` (a JSON Schema) the final answer must match it: the result
   * carries the parsed value in `structured`, or ends with OUTPUT_SCHEMA_MISMATCH after the
   * repairs; a schema that is not valid throws VALIDATION_ERROR before anything is sent.
   */
  chat(sessionId: string, message: string, options?: { model?: string; outputSchema?: object; onEvent?: (event: VeilEvent) => void }): Promise<RunResult>;
  /** Stops runs, kills shells, closes the store. */
  close(): Promise<void>;
}

/**
 * Opens a workspace in process (the runtime `veil serve` runs). It serves the sessions the
 * script uses and, unless `mode: "serve"` is passed, leaves other sessions' timers and
 * queued messages alone.
 *
 * @example
 * const veil = await openVeil({ workspace: process.cwd() });
 * const session = await veil.createSession();
 * const result = await veil.chat(session.id, "summarise the README", { onEvent: (e) => e.type === "chat.chunk" && process.stdout.write(e.content) });
 * await veil.close();
 */
export async function openVeil(options: RuntimeOptions): Promise<Veil> {
  // One-shot by default, like `veil run`: a script beside a `veil serve` must not fire that service's timers.
  const runtime = await createRuntime({ mode: "oneshot", ...options });
  return {
    runtime,
    createSession: (session = {}) => runtime.sessions.create({ agent: session.agent ?? "default", model: session.model }),
    async chat(sessionId, message, chat = {}) {
      const outputSchema = chat.outputSchema === undefined ? undefined : compileOutputSchema(chat.outputSchema, "outputSchema");
      const unsubscribe = chat.onEvent ? runtime.bus.subscribe({ sessionId }, chat.onEvent) : () => {};
      try {
        const receipt = await runtime.sessions.send(sessionId, message, { model: chat.model, meta: { source: "api" }, ...(outputSchema ? { outputSchema } : {}) });
        return await receipt.result;
      } finally {
        unsubscribe();
      }
    },
    close: () => runtime.close(),
  };
}
