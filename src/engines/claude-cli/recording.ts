import type { Clock } from "../../base/clock.js";
import type { Logger } from "../../base/log.js";
import { startAnthropicRecordingProxy, type AnthropicRecordingProxy, type ProxyRoute } from "../../llm/recordings/anthropic-proxy.js";
import type { ClaudeCliConfig } from "./index.js";

const ANTHROPIC_API = "https://api.anthropic.com";

/** How a turn's SDK reaches its model under VEIL_RECORD / VEIL_REPLAY. */
export interface TurnRecording {
  /** The proxy's base URL for this turn (the child's ANTHROPIC_BASE_URL). */
  baseUrl: string;
  /** Replaying: nothing is sent upstream, so no key is needed. */
  replaying: boolean;
  release(): void;
}

/**
 * The engine's recording proxy: started on the first turn that needs one (VEIL_RECORD or
 * VEIL_REPLAY in the environment), one per engine, closed with it.
 */
export class RecordingEndpoint {
  private proxy: Promise<AnthropicRecordingProxy> | null = null;

  constructor(private readonly clock: Clock) {}

  /** A route for one turn, or null when neither variable is set. */
  async forTurn(config: ClaudeCliConfig, log: Logger, onMismatch: (message: string) => void): Promise<TurnRecording | null> {
    const { env } = config;
    const mode = env.VEIL_REPLAY ? "replay" : env.VEIL_RECORD ? "record" : null;
    if (!mode) return null;
    this.proxy ??= startAnthropicRecordingProxy({ mode, file: (mode === "replay" ? env.VEIL_REPLAY : env.VEIL_RECORD)!, workspace: config.paths.workspace, clock: this.clock, log });
    // A recording that cannot be read fails every turn that needs it, with the same CONFIG_ERROR.
    const proxy = await this.proxy;
    const upstream = config.settings.claudeCli?.baseUrl ?? env.ANTHROPIC_BASE_URL ?? ANTHROPIC_API;
    const route: ProxyRoute = proxy.route({ upstream, onMismatch });
    return { baseUrl: route.baseUrl, replaying: mode === "replay", release: route.release };
  }

  async close(): Promise<void> {
    const proxy = this.proxy;
    this.proxy = null;
    await proxy?.then((started) => started.close()).catch(() => undefined);
  }
}
