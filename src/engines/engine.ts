import { runLoop, type LoopDeps, type LoopInput, type RunResult } from "../core/loop.js";
import { ZERO_USAGE } from "../store/store.js";

/**
 * An engine runs one turn of a session. The native engine is Veil's own loop over
 * an OpenAI-compatible provider; a Claude Agent SDK engine (model keys `cc/…`)
 * plugs in here with the same input, hooks and result.
 */
export interface Engine {
  readonly name: string;
  handles(modelKey: string): boolean;
  run(input: LoopInput, deps: LoopDeps): Promise<RunResult>;
}

export const nativeEngine: Engine = {
  name: "openai",
  handles: () => true,
  run: runLoop,
};

/**
 * `cc/…` keys select the claude-cli engine (CONTRACT §3). It is not part of this
 * build yet, so such a turn ends with a clear error instead of being sent to the
 * default provider under a wrong name.
 */
export const claudeCliPlaceholder: Engine = {
  name: "claude-cli",
  handles: (modelKey) => modelKey.startsWith("cc/"),
  async run(input): Promise<RunResult> {
    return {
      content: null,
      finishReason: "error",
      stopReason: "error",
      messageId: null,
      usage: { ...ZERO_USAGE },
      iterations: 0,
      error: { code: "CONFIG_ERROR", message: `model "${input.modelKey}" needs the claude-cli engine, which this build of Veil does not include yet` },
    };
  },
};

export const DEFAULT_ENGINES: readonly Engine[] = [claudeCliPlaceholder, nativeEngine];

export function selectEngine(engines: readonly Engine[], modelKey: string): Engine {
  return engines.find((engine) => engine.handles(modelKey)) ?? nativeEngine;
}
