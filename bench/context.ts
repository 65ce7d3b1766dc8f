import { join } from "node:path";
import { builtinDefaultAgent, defaultModelInfo, defaultSettings } from "../src/config/defaults.js";
import type { Settings, VeilConfig } from "../src/config/types.js";
import { systemClock } from "../src/base/clock.js";
import { randomIds } from "../src/base/ids.js";
import { memoryLogger } from "../src/base/log.js";
import type { Resources } from "../src/core/resources.js";
import type { Store } from "../src/store/store.js";
import type { ToolContext } from "../src/tools/types.js";
import { SessionWriter } from "../src/core/session-writer.js";
import { buildToolContext, type ToolTurn } from "../src/core/tool-context.js";

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
  const turn: ToolTurn = {
    sessionId: "bench",
    agent: builtinDefaultAgent(),
    mode: "chat",
    paths: config.paths,
    settings: config.settings,
    modelKey: "bench/model",
    model: defaultModelInfo(),
    clock: systemClock,
    session,
    runtime,
    services: {},
    log: memoryLogger(),
  };
  // Events go nowhere in a benchmark; the side tables are the real store's.
  const events = { publish: async () => ({}) as never };
  const writer = new SessionWriter({ sessionId: "bench", store, events, ids: randomIds, now: () => Date.now() });
  const call = { id: "call_bench", name: "bench" };
  return buildToolContext(turn, call, new AbortController().signal, writer.toolWrites(call));
}
