import type { Engine, RunEvent } from "./types.js";

/**
 * `cc/…` keys select the claude-cli engine (CONTRACT §3). Until it is part of the build,
 * such a turn ends at once with a clear error instead of going to the default provider
 * under a wrong name.
 */
export const claudeCliPlaceholder: Engine = {
  name: "claude-cli",
  handles: (modelKey) => modelKey.startsWith("cc/"),
  async *run(request): AsyncGenerator<RunEvent> {
    yield {
      type: "run_ended",
      stopReason: "error",
      error: { code: "CONFIG_ERROR", message: `model "${request.modelKey}" needs the claude-cli engine, which this build of Veil does not include yet` },
    };
  },
};
