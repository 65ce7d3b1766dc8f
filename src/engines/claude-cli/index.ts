import { accessSync, constants } from "node:fs";
import { systemClock, type Clock } from "../../base/clock.js";
import type { VeilConfig } from "../../config/types.js";
import { VeilError, errorMessage, isVeilError } from "../../errors.js";
import { modelInfo } from "../../llm/models.js";
import { ClaudeProcesses } from "./processes.js";
import { RecordingEndpoint, type TurnRecording } from "./recording.js";
import { loadClaudeSdk, importClaudeSdk, type SdkImporter } from "./sdk-loader.js";
import { resolveApiKey } from "./sdk-options.js";
import type { Engine, RunEvent, RunIO, RunRequest } from "../types.js";
import type { ClaudeTurn } from "./turn.js";

export const CLAUDE_CLI_PREFIX = "cc/";

export type ClaudeCliConfig = Pick<VeilConfig, "settings" | "env" | "models"> & { paths: Pick<VeilConfig["paths"], "workspace"> };

export interface ClaudeCliEngineOptions {
  /** The configuration, or a getter for it (read at the start of each turn). */
  config: ClaudeCliConfig | (() => ClaudeCliConfig);
  /** default: import("@anthropic-ai/claude-agent-sdk") */
  importSdk?: SdkImporter;
  /** Stamps recorded exchanges (VEIL_RECORD); default: the system clock. */
  clock?: Clock;
}

export interface ClaudeCliEngine extends Engine {
  /** Ends every `claude` process this engine started (server shutdown). */
  shutdown(): Promise<void>;
  /** Pids of the live `claude` processes (diagnostics and tests). */
  livePids(): number[];
}

/**
 * The claude-cli engine: `cc/<model>` keys run through the Claude Agent SDK.
 * The SDK, the MCP server and the turn machinery load on the first cc/ turn only.
 */
export function createClaudeCliEngine(options: ClaudeCliEngineOptions): ClaudeCliEngine {
  const processes = new ClaudeProcesses();
  const importSdk = options.importSdk ?? importClaudeSdk;
  const recordings = new RecordingEndpoint(options.clock ?? systemClock);
  return {
    name: "claude-cli",
    handles: (modelKey) => modelKey.startsWith(CLAUDE_CLI_PREFIX),
    toolsUpFront: true,
    checkReady: async () => {
      await loadClaudeSdk(importSdk);
      const config = typeof options.config === "function" ? options.config() : options.config;
      checkExecutable(config.settings.claudeCli?.executable);
      // A replay sends nothing upstream: no key is needed.
      if (!config.env.VEIL_REPLAY) resolveApiKey(config.settings.claudeCli, config.env);
    },
    run: (request, io) => runTurn(request, io),
    shutdown: async () => {
      await processes.endAll();
      await recordings.close();
    },
    livePids: () => processes.pids(),
  };

  async function* runTurn(request: RunRequest, io: RunIO): AsyncGenerator<RunEvent> {
    let turn: ClaudeTurn | undefined;
    let recording: TurnRecording | null = null;
    try {
      const sdk = await loadClaudeSdk(importSdk);
      const config = typeof options.config === "function" ? options.config() : options.config;
      checkExecutable(config.settings.claudeCli?.executable);
      const turns = await import("./turn.js");
      recording = await recordings.forTurn(config, io.log, (message) => turn?.replayMismatch(message));
      turn = new turns.ClaudeTurn(request, io, {
        sdk,
        settings: config.settings,
        env: config.env,
        workspace: config.paths.workspace,
        model: modelInfo(request.modelKey, config.models),
        processes,
        recording,
      });
    } catch (error) {
      recording?.release();
      yield { type: "run_ended", stopReason: "error", error: { code: isVeilError(error) ? error.code : "CONFIG_ERROR", message: errorMessage(error) } };
      return;
    }
    try {
      yield* turn.events();
    } finally {
      recording?.release();
    }
  }
}

function checkExecutable(path: string | undefined): void {
  if (!path) return;
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new VeilError("CONFIG_ERROR", `settings.claudeCli.executable: no executable claude binary at ${path}`);
  }
}
