import { mkdirSync } from "node:fs";
import type { AgentConfig, Settings, VeilConfig } from "./config/types.js";
import { agentsStamp, loadAgents, loadConfig } from "./config/load.js";
import { systemClock, type Clock } from "./base/clock.js";
import type { EventBus } from "./base/events.js";
import { randomIds, type IdGenerator } from "./base/ids.js";
import { createLogger } from "./base/log.js";
import { InProcessEventBus } from "./core/memory-bus.js";
import { Resources } from "./core/resources.js";
import { SessionManager } from "./core/session-manager.js";
import { createLlmClient } from "./llm/fallback.js";
import type { LlmClient } from "./llm/types.js";
import type { Store } from "./store/store.js";
import { openStore } from "./store/open.js";
import { builtinTools } from "./tools/builtin/index.js";
import type { CustomToolSource } from "./tools/registry.js";
import type { Logger, RegisteredTool, ToolServices } from "./tools/types.js";
import { createCustomToolSource } from "./tools/custom/source.js";
import { FEATURES } from "./features.js";

export interface RuntimeOptions {
  workspace: string;
  env?: Record<string, string | undefined>;
  /** CLI flags: the top layer of the settings merge. */
  overrides?: Partial<Settings>;
  /** A config already loaded (skips loadConfig). */
  config?: VeilConfig;
  clock?: Clock;
  ids?: IdGenerator;
  log?: Logger;
  store?: Store;
  bus?: EventBus;
  llm?: LlmClient;
  customTools?: CustomToolSource;
  builtins?: RegisteredTool[];
  /** Re-read agent folders per session (default true) so new agents need no restart. */
  reloadAgents?: boolean;
}

export interface Runtime {
  config: VeilConfig;
  store: Store;
  bus: EventBus;
  llm: LlmClient;
  clock: Clock;
  ids: IdGenerator;
  log: Logger;
  builtins: readonly RegisteredTool[];
  customTools: CustomToolSource;
  sessions: SessionManager;
  resources: Resources;
  /** Services tools reach through ctx.services; features register theirs at start. */
  services: ToolServices;
  agents(): Record<string, AgentConfig>;
  close(): Promise<void>;
}

/** The composition root: wires config, store, bus, LLM, tools and sessions. */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const env = options.env ?? process.env;
  const config = options.config ?? loadConfig({ workspace: options.workspace, env, overrides: options.overrides });
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  const log = options.log ?? createLogger({ level: (env.VEIL_LOG_LEVEL as "info" | undefined) ?? "info" });
  mkdirSync(config.paths.projectDir, { recursive: true });
  const store = options.store ?? (await openStore(config, { log }));
  const bus = options.bus ?? new InProcessEventBus({ clock, onHandlerError: (error) => log.warn("event handler failed", { error: String(error) }) });
  const llm = options.llm ?? createLlmClient({ settings: config.settings, models: config.models, env: config.env, clock, log });
  const builtins = options.builtins ?? builtinTools();
  const resources = new Resources();
  const services: ToolServices = {};
  const customTools = options.customTools ?? createCustomToolSource({ config, log, resources, services });
  let cachedAgents = config.agents;
  let stamp = agentsStamp(config.paths);
  const agents = () => {
    if (options.reloadAgents === false) return cachedAgents;
    try {
      // Re-read only when an agent file changed: sessions see new agents without a restart.
      const now = agentsStamp(config.paths);
      if (now !== stamp) {
        cachedAgents = loadAgents(config.paths);
        stamp = now;
      }
    } catch (error) {
      log.warn("agent folders could not be re-read; keeping the last good set", { error: String(error) });
    }
    return cachedAgents;
  };
  const sessions = new SessionManager({ config, store, bus, llm, clock, ids, log, builtins, customTools, runtimeResources: resources, services, agents });
  services.sessions = sessions;

  const runtime: Runtime = {
    config,
    store,
    bus,
    llm,
    clock,
    ids,
    log,
    builtins,
    customTools,
    sessions,
    resources,
    services,
    agents,
    async close() {
      await sessions.shutdown();
      await resources.dispose();
      await store.close();
    },
  };
  for (const install of FEATURES) await install(runtime);
  return runtime;
}
