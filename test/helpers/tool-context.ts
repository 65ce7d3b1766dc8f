import { join } from "node:path";
import { mkdirSync } from "node:fs";
import type { AgentConfig, ModelInfo, Settings, VeilConfig } from "../../src/config/types.js";
import { builtinDefaultAgent, defaultModelInfo, defaultSettings } from "../../src/config/defaults.js";
import { systemClock, type Clock } from "../../src/base/clock.js";
import { randomIds } from "../../src/base/ids.js";
import { InProcessEventBus } from "../../src/core/memory-bus.js";
import { EventLog } from "../../src/core/event-log.js";
import type { VeilEvent } from "../../src/base/events.js";
import { Resources } from "../../src/core/resources.js";
import { memoryLogger } from "../../src/base/log.js";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { RegisteredTool, ToolContext, ToolOutcome, ToolServices } from "../../src/tools/types.js";
import { formatThrown } from "../../src/tools/format.js";
import { SessionWriter } from "../../src/core/session-writer.js";
import { buildToolContext, type ToolTurn } from "../../src/core/tool-context.js";
import { tmpWorkspace, type TempWorkspace } from "./workspace.js";

export interface ToolHarness {
  ws: TempWorkspace;
  /** The config the harness's contexts were made from (paths under the workspace). */
  config: VeilConfig;
  store: SqliteStore;
  bus: InProcessEventBus;
  events: VeilEvent[];
  sessionId: string;
  sessionResources: Resources;
  runtimeResources: Resources;
  /** A ToolContext for one call (fresh toolCallId and signal each time). */
  context(overrides?: Partial<ToolContext>): ToolContext;
  /**
   * Validates like the loop does, runs the tool, and renders errors the way the
   * model sees them. Returns the outcome normalised to { output, ... }.
   */
  call(tool: RegisteredTool, input: Record<string, unknown>, overrides?: Partial<ToolContext>): Promise<ToolOutcome & { success: boolean }>;
  /** Disposes session resources (as a session close would), the store and the workspace. */
  close(): Promise<void>;
}

export interface HarnessOptions {
  files?: Record<string, string | Buffer>;
  settings?: Partial<Settings>;
  agent?: Partial<AgentConfig>;
  model?: Partial<ModelInfo>;
  modelKey?: string;
  clock?: Clock;
  services?: ToolServices;
}

/** Real temp workspace, real SQLite file, real bus: everything a built-in tool touches. */
export async function createToolHarness(options: HarnessOptions = {}): Promise<ToolHarness> {
  const ws = tmpWorkspace({ files: options.files });
  const projectDir = join(ws.root, ".veil");
  mkdirSync(projectDir, { recursive: true });
  const store = SqliteStore.open(join(projectDir, "veil.db"));
  const bus = new InProcessEventBus();
  const events: VeilEvent[] = [];
  bus.subscribe({}, (e) => events.push(e));
  const eventLog = new EventLog({ store, bus, clock: options.clock ?? systemClock, log: memoryLogger() });
  const settings: Settings = { ...defaultSettings(), ...options.settings } as Settings;
  const agent: AgentConfig = { ...builtinDefaultAgent(), ...options.agent } as AgentConfig;
  const model: ModelInfo = { ...defaultModelInfo(), ...options.model };
  const config: VeilConfig = {
    paths: {
      workspace: ws.root,
      projectDir,
      homeDir: join(ws.root, ".veil-home"),
      dbPath: join(projectDir, "veil.db"),
      secretPath: join(projectDir, "secret"),
      memoryDir: join(projectDir, "memory"),
    },
    settings,
    models: {},
    agents: { [agent.name]: agent },
    env: {},
  };
  const session = await store.createSession({ id: randomIds.next("sess"), agent: agent.name, mode: "chat" });
  const sessionResources = new Resources();
  const runtimeResources = new Resources();
  const log = memoryLogger();
  const clock = options.clock ?? systemClock;

  // The writes a run's recorder would hand the call, here over the plain store.
  const writer = new SessionWriter({ sessionId: session.id, store, events: eventLog, ids: randomIds, now: () => clock.now() });
  const turn: ToolTurn = {
    sessionId: session.id,
    agent,
    mode: "chat",
    paths: config.paths,
    settings,
    modelKey: options.modelKey ?? "test/model",
    model,
    clock,
    session: sessionResources,
    runtime: runtimeResources,
    services: options.services ?? {},
    log,
  };
  const context = (overrides: Partial<ToolContext> = {}): ToolContext => {
    const call = { id: randomIds.next("call"), name: "test" };
    return { ...buildToolContext(turn, call, new AbortController().signal, writer.toolWrites(call)), ...overrides };
  };

  return {
    ws,
    config,
    store,
    bus,
    events,
    sessionId: session.id,
    sessionResources,
    runtimeResources,
    context,
    async call(tool, input, overrides) {
      const problem = tool.validate(input);
      if (problem) return { output: `Error: VALIDATION_ERROR — ${problem}`, success: false };
      try {
        const result = await tool.execute(input, context(overrides)).finally(() => eventLog.flush());
        const outcome: ToolOutcome = typeof result === "string" ? { output: result } : result;
        return { ...outcome, success: !outcome.isError };
      } catch (error) {
        return { output: formatThrown(error).text, success: false };
      }
    },
    async close() {
      await eventLog.flush();
      await sessionResources.dispose();
      await runtimeResources.dispose();
      await store.close();
      ws.cleanup();
    },
  };
}
