import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRuntime, type Runtime, type RuntimeOptions } from "../../src/runtime.js";
import { memoryLogger } from "../../src/base/log.js";
import type { VeilEvent } from "../../src/base/events.js";
import type { StartedServer } from "../../src/server/listen.js";
import { startFakeLlm, type FakeLlm } from "./fake-llm.js";
import { tmpWorkspace, type TempWorkspace } from "./workspace.js";

export interface RuntimeHarness {
  ws: TempWorkspace;
  llm: FakeLlm;
  runtime: Runtime;
  events: VeilEvent[];
  log: ReturnType<typeof memoryLogger>;
  env: Record<string, string>;
  /** Starts the HTTP server on 127.0.0.1:0 with secret "test-secret". */
  serve(options?: { heartbeatMs?: number }): Promise<StartedServer & { fetch(path: string, init?: RequestInit): Promise<Response> }>;
  close(): Promise<void>;
}

export interface RuntimeHarnessOptions extends Partial<RuntimeOptions> {
  files?: Record<string, string | Buffer>;
  settings?: Record<string, unknown>;
  models?: Record<string, unknown>;
  llm?: FakeLlm;
}

export const TEST_SECRET = "test-secret";

/** A runtime over a real temp workspace, a real SQLite file and the fake LLM over HTTP. */
export async function createRuntimeHarness(options: RuntimeHarnessOptions = {}): Promise<RuntimeHarness> {
  const ws = tmpWorkspace({ files: options.files });
  const llm = options.llm ?? (await startFakeLlm());
  const home = join(ws.root, ".veil-home");
  mkdirSync(home, { recursive: true });
  mkdirSync(join(ws.root, ".veil"), { recursive: true });
  const settings = { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 5 }, ...options.settings };
  writeFileSync(join(ws.root, ".veil", "settings.json"), JSON.stringify(settings));
  if (options.models) writeFileSync(join(ws.root, ".veil", "models.json"), JSON.stringify(options.models));
  const env: Record<string, string> = { VEIL_BASE_URL: llm.baseUrl, VEIL_API_KEY: "sk-test", VEIL_MODEL: "fake-model", VEIL_HOME: home, ...(options.env as Record<string, string>) };
  const log = memoryLogger();
  const { files: _files, settings: _settings, models: _models, llm: _llm, env: _env, ...runtimeOptions } = options;
  // Shells get a private HOME: the machine's ~/.bashrc (pyenv, conda…) is not under test and
  // makes every shell start slow, or wait on a lock another process left.
  const toolServices = { shell: { env: { ...process.env, HOME: home } }, ...options.toolServices };
  const runtime = await createRuntime({ workspace: ws.root, env, log, ...runtimeOptions, toolServices });
  const events: VeilEvent[] = [];
  runtime.bus.subscribe({}, (e) => events.push(e));
  let server: StartedServer | undefined;
  return {
    ws,
    llm,
    runtime,
    events,
    log,
    env,
    async serve(serveOptions = {}) {
      const { startServer } = await import("../../src/server/listen.js");
      server = await startServer({ runtime, secret: TEST_SECRET, port: 0, heartbeatMs: serveOptions.heartbeatMs, closeRuntime: false });
      const started = server;
      return {
        ...started,
        fetch: (path: string, init: RequestInit = {}) =>
          fetch(`${started.url}${path}`, { ...init, headers: { authorization: `Bearer ${TEST_SECRET}`, ...(init.body ? { "content-type": "application/json" } : {}), ...(init.headers as Record<string, string>) } }),
      };
    },
    async close() {
      await server?.close();
      await runtime.close();
      if (!options.llm) await llm.close();
      ws.cleanup();
    },
  };
}
