import { join } from "node:path";
import { builtinDefaultAgent, defaultModelInfo, defaultSettings } from "../src/config/defaults.js";
import type { Settings, VeilConfig } from "../src/config/types.js";
import { systemClock } from "../src/base/clock.js";
import { randomIds } from "../src/base/ids.js";
import { memoryLogger } from "../src/base/log.js";
import type { Resources } from "../src/core/resources.js";
import type { Store } from "../src/store/store.js";
import type { ToolContext } from "../src/tools/types.js";

/** A config for a bench workspace: default agent, defaults plus `settings`. */
export function benchConfig(workspace: string, settings: Partial<Settings> = {}): VeilConfig {
  const agent = builtinDefaultAgent();
  const projectDir = join(workspace, ".veil");
  return {
    paths: { workspace, projectDir, homeDir: join(workspace, ".veil-home"), dbPath: join(projectDir, "veil.db"), secretPath: join(projectDir, "secret"), memoryDir: join(projectDir, "memory") },
    settings: { ...defaultSettings(), ...settings } as Settings,
    models: {},
    agents: { [agent.name]: agent },
    env: {},
  };
}

/** A ToolContext for calling a built-in tool directly in a benchmark. */
export function benchToolContext(config: VeilConfig, store: Store, runtime: Resources, session: Resources): ToolContext {
  return {
    sessionId: "bench",
    agent: builtinDefaultAgent(),
    mode: "chat",
    workspace: config.paths.workspace,
    config,
    settings: config.settings,
    modelKey: "bench/model",
    model: defaultModelInfo(),
    toolCallId: "call_bench",
    store,
    clock: systemClock,
    ids: randomIds,
    signal: new AbortController().signal,
    emitChunk: () => undefined,
    emit: async () => undefined,
    session,
    runtime,
    services: {},
    log: memoryLogger(),
  };
}
