/**
 * CLAUDE ENGINE TESTS — a harness that drives the claude-cli engine directly through its
 * RunRequest / RunIO with real parts: a temp workspace, a real SQLite store, the real
 * session toolset (built-ins + folder custom tools), Veil's real tool-call state machine,
 * the real Claude Agent SDK and `claude` binary, against the fake Anthropic server.
 * The `record` step mirrors what the runtime's recorder does with run events (rows + wire events).
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentConfig, Settings, VeilConfig } from "../../../src/config/types.js";
import { builtinDefaultAgent, defaultSettings } from "../../../src/config/defaults.js";
import { systemClock } from "../../../src/base/clock.js";
import { randomIds } from "../../../src/base/ids.js";
import { memoryLogger } from "../../../src/base/log.js";
import type { VeilEvent } from "../../../src/base/events.js";
import { ZERO_USAGE, type TokenUsage } from "../../../src/base/usage.js";
import { InProcessEventBus } from "../../../src/core/memory-bus.js";
import { Resources } from "../../../src/core/resources.js";
import { prepareRun } from "../../../src/core/run-setup.js";
import { runToolCall } from "../../../src/core/tool-calls.js";
import { rowsToMessages } from "../../../src/core/context-builder.js";
import { contextSize, addUsage } from "../../../src/core/stop-conditions.js";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.js";
import { builtinTools } from "../../../src/tools/builtin/index.js";
import { createCustomToolSource } from "../../../src/tools/custom/source.js";
import { preview } from "../../../src/tools/format.js";
import { createClaudeCliEngine, type ClaudeCliEngine } from "../../../src/engines/claude-cli/index.js";
import type { RunEvent, RunIO } from "../../../src/engines/claude-cli/seam.js";
import type { SdkImporter } from "../../../src/engines/claude-cli/sdk-loader.js";
import type { StopReason } from "../../../src/core/loop.js";
import { startFakeAnthropic, type FakeAnthropic } from "../../helpers/fake-anthropic.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";

export interface EngineHarnessOptions {
  files?: Record<string, string>;
  agent?: Partial<AgentConfig>;
  settings?: Partial<Settings>;
  claudeCli?: Record<string, unknown>;
  env?: Record<string, string>;
  importSdk?: SdkImporter;
  modelKey?: string;
  models?: Record<string, { context_window: number; input_modalities?: ("text" | "image" | "audio")[] }>;
}

export interface TurnOutcome {
  events: RunEvent[];
  stopReason: StopReason | undefined;
  error?: { code: string; message: string };
}

export interface EngineHarness {
  ws: TempWorkspace;
  api: FakeAnthropic;
  store: SqliteStore;
  engine: ClaudeCliEngine;
  sessionId: string;
  /** Wire events as the recorder would publish them. */
  wire: VeilEvent[];
  log: ReturnType<typeof memoryLogger>;
  /** Stores a user message and runs one turn to its end. */
  turn(message: string, options?: { signal?: AbortSignal; onEvent?: (event: RunEvent) => void; inbox?: string[][]; stopRequested?: () => StopReason | null; budget?: Record<string, number> }): Promise<TurnOutcome>;
  /** Queues a message for the running turn (the session inbox). */
  inject(message: string): void;
  close(): Promise<void>;
}

export async function createEngineHarness(options: EngineHarnessOptions = {}): Promise<EngineHarness> {
  const ws = tmpWorkspace({ files: options.files });
  const api = await startFakeAnthropic();
  const projectDir = join(ws.root, ".veil");
  mkdirSync(projectDir, { recursive: true });
  const home = join(ws.root, ".home");
  mkdirSync(home, { recursive: true });
  const store = SqliteStore.open(join(projectDir, "veil.db"));
  const bus = new InProcessEventBus();
  const wire: VeilEvent[] = [];
  bus.subscribe({}, (e) => wire.push(e));
  const log = memoryLogger();
  const settings = {
    ...defaultSettings(),
    retry: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 5 },
    claudeCli: { baseUrl: api.baseUrl, apiKey: "sk-ant-test", ...options.claudeCli },
    ...options.settings,
  } as Settings;
  const agent: AgentConfig = { ...builtinDefaultAgent(), ...options.agent } as AgentConfig;
  const config: VeilConfig = {
    paths: { workspace: ws.root, projectDir, homeDir: join(ws.root, ".veil-home"), dbPath: join(projectDir, "veil.db"), secretPath: join(projectDir, "secret"), memoryDir: join(projectDir, "memory") },
    settings,
    models: Object.fromEntries(Object.entries(options.models ?? {}).map(([k, v]) => [k, { input_modalities: ["text"], ...v }])) as VeilConfig["models"],
    agents: { [agent.name]: agent },
    env: { PATH: process.env.PATH, HOME: home, ...options.env },
  };
  const runtimeResources = new Resources();
  const sessionResources = new Resources();
  const services = {};
  const customTools = createCustomToolSource({ config, log, resources: runtimeResources, services });
  const engine = createClaudeCliEngine({ config, importSdk: options.importSdk });
  const session = await store.createSession({ id: randomIds.next("sess"), agent: agent.name, mode: "chat", model: options.modelKey ?? "cc/claude-test" });
  const setupDeps = { config, store, bus, clock: systemClock, ids: randomIds, log, builtins: builtinTools(), customTools, runtimeResources, services, agents: () => config.agents };
  const inbox: string[] = [];

  async function turn(message: string, turnOptions: Parameters<EngineHarness["turn"]>[1] = {}): Promise<TurnOutcome> {
    // Like the session manager: the message waits in the inbox and the engine drains it at its first boundary.
    inbox.push(message);
    const row = (await store.getSession(session.id))!;
    const prepared = await prepareRun(setupDeps, row, {}, sessionResources);
    const controller = new AbortController();
    turnOptions.signal?.addEventListener("abort", () => controller.abort(), { once: true });
    const signal = controller.signal;
    const io: RunIO = {
      async executeTool(call) {
        const result = await runToolCall(call, signal, { store, bus, clock: systemClock, log, toolset: prepared.toolset, sessionId: session.id, makeContext: prepared.makeContext });
        const stored = await store.appendMessage({ id: randomIds.next("msg"), session_id: session.id, role: "tool", content: result.output, tool_call_id: call.id, meta: { toolName: call.name, success: result.success } });
        bus.publish(session.id, { type: "chat.message", role: "tool", id: stored.id, session_id: session.id, content: stored.content, tool_call_id: call.id, created_at: stored.created_at });
        return result;
      },
      async nextInputs() {
        const rows = [];
        while (inbox.length > 0) rows.push(await store.appendMessage({ id: randomIds.next("msg"), session_id: session.id, role: "user", content: inbox.shift()! }));
        return rowsToMessages(rows);
      },
      hasPendingInput: () => inbox.length > 0,
      stopRequested: turnOptions.stopRequested ?? (() => null),
      saveEngineState: (state) => store.setSessionMeta(session.id, "engineState", state),
      clock: systemClock,
      log,
    };
    const events: RunEvent[] = [];
    let usage: TokenUsage = { ...ZERO_USAGE };
    let ended: Extract<RunEvent, { type: "run_ended" }> | undefined;
    const stream = engine.run(
      {
        sessionId: session.id,
        modelKey: prepared.modelKey,
        reasoning: prepared.reasoning,
        systemPrompt: prepared.systemPrompt,
        history: prepared.history,
        toolset: prepared.toolset,
        budget: async () => ({ ...(await prepared.budget()), ...turnOptions.budget }),
        usageBefore: row.token_usage ?? ZERO_USAGE,
        signal,
        engineState: (await store.getSessionMeta<Record<string, unknown>>(session.id, "engineState")) ?? null,
      },
      io,
    );
    for await (const event of stream) {
      events.push(event);
      turnOptions.onEvent?.(event);
      await record(event);
      if (event.type === "run_ended") ended = event;
      if (event.type === "model_usage") usage = addUsage(usage, event.usage);
    }
    return { events, stopReason: ended?.stopReason, ...(ended?.error ? { error: ended.error } : {}) };
  }

  async function record(event: RunEvent): Promise<void> {
    const id = session.id;
    switch (event.type) {
      case "text_delta":
        return void bus.publish(id, { type: "chat.chunk", content: event.delta });
      case "thinking_delta":
        return void bus.publish(id, { type: "thinking.chunk", content: event.delta });
      case "tool_call_started":
        return void bus.publish(id, { type: "inference.tool", name: event.name, toolCallId: event.id });
      case "model_usage":
        return store.addTokenUsage(id, event.usage, contextSize(event.usage));
      case "assistant_message": {
        const { message } = event;
        const row = await store.appendMessage({ id: randomIds.next("msg"), session_id: id, role: "assistant", content: message.content, thinking: message.thinking, tool_calls: message.toolCalls.length ? message.toolCalls : null, finish_reason: event.finishReason, token_usage: event.usage });
        for (const call of message.toolCalls) await store.upsertToolCall({ id: call.id, session_id: id, message_id: row.id, name: call.name, arguments: call.arguments, state: "pending" });
        return void bus.publish(id, { type: "chat.message", role: "assistant", id: row.id, session_id: id, content: row.content, created_at: row.created_at, finishReason: event.finishReason, tokenUsage: event.usage, thinking_content: row.thinking, ...(row.tool_calls ? { tool_calls: row.tool_calls } : {}) });
      }
      case "tool_started":
        return void bus.publish(id, { type: "tool.start", toolName: event.call.name, toolCallId: event.call.id, toolInput: event.input });
      case "tool_progress":
        return void bus.publish(id, { type: "tool.progress", toolName: event.name, toolUseId: event.callId, elapsed: Math.round(event.elapsedMs / 1000) });
      case "tool_finished": {
        const { result } = event;
        await store.setToolCallState(result.call.id, id, result.state, result.output);
        bus.publish(id, { type: "tool.end", toolName: result.call.name, toolCallId: result.call.id, toolInput: event.input, output: result.output, outputPreview: preview(result.output), success: result.success, durationMs: result.durationMs });
        const stored = await store.appendMessage({ id: randomIds.next("msg"), session_id: id, role: "tool", content: result.output, tool_call_id: result.call.id, meta: { toolName: result.call.name, success: result.success } });
        return void bus.publish(id, { type: "chat.message", role: "tool", id: stored.id, session_id: id, content: stored.content, tool_call_id: result.call.id, created_at: stored.created_at });
      }
      case "run_ended":
        return;
    }
  }

  return {
    ws,
    api,
    store,
    engine,
    sessionId: session.id,
    wire,
    log,
    turn,
    inject: (message) => void inbox.push(message),
    async close() {
      await engine.shutdown();
      await sessionResources.dispose();
      await runtimeResources.dispose();
      await store.close();
      await api.close();
      ws.cleanup();
    },
  };
}

/** True while the process exists and is not a zombie (for the no-leak checks). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/\) [ZX] /.test(stat);
  } catch {
    return false;
  }
}
