/**
 * CLAUDE ENGINE TESTS — a harness over the real runtime (session manager, recorder, store,
 * event log, tools) whose cc/ turns run through the real Claude Agent SDK and `claude`
 * binary against the fake Anthropic server. The engine's run events are tapped on their
 * way to the recorder, so tests can assert on them as well as on wire events and rows.
 */
import { processes } from "../../helpers/proc.js";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import type { VeilEvent } from "../../../src/base/events.js";
import { createClaudeCliEngine, type ClaudeCliEngine } from "../../../src/engines/claude-cli/index.js";
import type { SdkImporter } from "../../../src/engines/claude-cli/sdk-loader.js";
import type { Engine, RunEvent, RunResult, StopReason } from "../../../src/engines/types.js";
import type { OutputSchema } from "../../../src/engines/output-schema.js";
import type { Runtime } from "../../../src/runtime.js";
import type { Store } from "../../../src/store/store.js";
import { startFakeAnthropic, type FakeAnthropic } from "../../helpers/fake-anthropic.js";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import type { TempWorkspace } from "../../helpers/workspace.js";

export interface EngineHarnessOptions {
  files?: Record<string, string>;
  /** agent.json of the project agent "default" (overrides the built-in one). */
  agent?: Record<string, unknown>;
  settings?: Record<string, unknown>;
  claudeCli?: Record<string, unknown>;
  models?: Record<string, unknown>;
  importSdk?: SdkImporter;
  modelKey?: string;
  /** More variables of the runtime's environment (OTEL_*). */
  env?: Record<string, string>;
}

export interface TurnOutcome {
  events: RunEvent[];
  stopReason: StopReason | undefined;
  error?: { code: string; message: string };
  /** What the sender of the message got. */
  result: RunResult;
}

export interface EngineHarness {
  ws: TempWorkspace;
  api: FakeAnthropic;
  runtime: Runtime;
  store: Store;
  engine: ClaudeCliEngine;
  sessionId: string;
  /** Every published event (as SSE clients get them). */
  wire: VeilEvent[];
  log: RuntimeHarness["log"];
  harness: RuntimeHarness;
  /** Sends a message to the session and waits for the run that consumed it. */
  turn(message: string, options?: { onEvent?: (event: RunEvent) => void | Promise<void>; budget?: Record<string, number>; outputSchema?: OutputSchema }): Promise<TurnOutcome>;
  /** Sends a message while a run is going (it waits in the inbox). */
  inject(message: string): void;
  close(): Promise<void>;
}

export async function createEngineHarness(options: EngineHarnessOptions = {}): Promise<EngineHarness> {
  const api = await startFakeAnthropic();
  let runtime: Runtime | undefined;
  const engine = createClaudeCliEngine({ config: () => runtime!.config, importSdk: options.importSdk });
  let tap: ((event: RunEvent) => void | Promise<void>) | null = null;
  const tapped: Engine = {
    name: engine.name,
    handles: engine.handles,
    toolsUpFront: engine.toolsUpFront,
    async *run(request, io) {
      for await (const event of engine.run(request, io)) {
        await tap?.(event);
        yield event;
      }
    },
  };
  const files: Record<string, string> = { ...options.files };
  if (options.agent) files[".veil/agents/default/agent.json"] = JSON.stringify({ name: "default", ...options.agent });
  const home = `/tmp/veil-cc-home-${process.pid}-${Math.random().toString(36).slice(2)}`;
  mkdirSync(home, { recursive: true });
  const harness = await createRuntimeHarness({
    files,
    settings: { retry: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 5 }, claudeCli: { baseUrl: api.baseUrl, apiKey: "sk-ant-test", ...options.claudeCli }, ...options.settings },
    models: options.models,
    env: { PATH: process.env.PATH ?? "", HOME: home, ...options.env },
    engines: [tapped],
  });
  runtime = harness.runtime;
  const session = await runtime.sessions.create({ agent: "default", model: options.modelKey ?? "cc/claude-test" });

  return {
    ws: harness.ws,
    api,
    runtime,
    store: runtime.store,
    engine,
    sessionId: session.id,
    wire: harness.events,
    log: harness.log,
    harness,
    async turn(message, turnOptions = {}) {
      const rt = runtime!;
      await rt.store.updateSession(session.id, { budget_override: turnOptions.budget ?? null });
      const events: RunEvent[] = [];
      tap = async (event) => {
        events.push(event);
        await turnOptions.onEvent?.(event);
      };
      let result: RunResult;
      try {
        const receipt = await rt.sessions.send(session.id, message, turnOptions.outputSchema ? { outputSchema: turnOptions.outputSchema } : {});
        result = await receipt.result;
      } finally {
        tap = null;
      }
      const ended = events.find((e): e is Extract<RunEvent, { type: "run_ended" }> => e.type === "run_ended");
      return { events, stopReason: ended?.stopReason, result, ...(ended?.error ? { error: ended.error } : {}) };
    },
    inject(message) {
      void runtime!.sessions.send(session.id, message);
    },
    async close() {
      await harness.close();
      await engine.shutdown();
      await api.close();
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** The output of each tool's (last) `tool.end`, by Veil tool name. */
export function toolResults(h: EngineHarness): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of h.wire) if (e.type === "tool.end") out[(e as { toolName: string }).toolName] = (e as { output: string }).output;
  return out;
}

/** True while the process exists and is not a zombie (for the no-leak checks). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Live `claude` processes that are children of this test process (not other users' ones). */
export function childClaudePids(): number[] {
  return processes()
    .filter((p) => p.comm === "claude" && p.ppid === process.pid && p.state !== "Z")
    .map((p) => p.pid);
}
