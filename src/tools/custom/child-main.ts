/**
 * Entry of a custom-tool process (forked by ChildPool). Loads a tool's index.js as
 * CommonJS, injects the `_` context fields, runs one call at a time and answers over
 * IPC. `require("veilcli")` inside a tool resolves to a module whose LLM call is
 * performed by the server, so provider keys never enter this process.
 */
import Module from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { CallContext, ChildMessage, ParentMessage, RpcMethod } from "./protocol.js";
import { PROXY_SOCKET_ARG, serializeError } from "./protocol.js";
import { Worker } from "node:worker_threads";
import { PROXY_PORT } from "../shared/sandbox/environment.js";

type ExecuteFn = (input: Record<string, unknown>) => unknown;
interface PendingRpc {
  resolve(value: unknown): void;
  reject(error: Error): void;
  onChunk?: (text: string) => void;
}

const ModuleInternals = Module as unknown as {
  new (id: string, parent?: unknown): { filename: string; paths: string[]; exports: unknown; loaded: boolean; _compile(source: string, file: string): void };
  _cache: Record<string, unknown>;
  _nodeModulePaths(dir: string): string[];
  _resolveFilename(request: string, parent: unknown, isMain: boolean, options?: unknown): string;
};

/** How often the process checks that the server that forked it still lives. */
const PARENT_CHECK_MS = 500;

/**
 * A tool process must not outlive its server. A kill -9 of the server closes the IPC
 * channel, but that can happen before this module runs (then no "disconnect" is seen),
 * so the parent pid (VEIL_PARENT_PID, set by the pool) is also checked on a timer.
 */
function exitWithParent(): void {
  const expected = Number(process.env.VEIL_PARENT_PID);
  const orphaned = () => !process.connected || (Number.isInteger(expected) && expected > 0 && process.ppid !== expected);
  if (orphaned()) process.exit(0);
  process.on("disconnect", () => process.exit(0));
  setInterval(() => {
    if (orphaned()) process.exit(0);
  }, PARENT_CHECK_MS).unref();
}

function main(): void {
  exitWithParent();
  // A failed send means the channel is gone: exit, never throw (an error thrown from here
  // would reach the fatal handler, which sends again: an endless loop on a dead channel).
  const send = (message: ChildMessage) => {
    if (!process.connected) return process.exit(0);
    process.send?.(message, undefined, {}, (error: Error | null) => {
      if (error && !process.connected) process.exit(0);
    });
  };
  // Loaded after "ready" so a cold process answers its first call sooner; LLM calls wait for it.
  let providerApi: typeof import("../../llm/provider-api.js") | null = null;
  const providerApiLoaded = import("../../llm/provider-api.js").then((api) => (providerApi = api));
  const loaded = new Map<string, { version: string; execute: ExecuteFn }>();
  const pending = new Map<number, PendingRpc>();
  let current: number | null = null;
  let rpcSeq = 0;

  const rpc = (method: RpcMethod, params: Record<string, unknown>, onChunk?: (text: string) => void): Promise<unknown> => {
    const id = current;
    if (id === null) return Promise.reject(new Error(`${method === "llm" ? "callWithProviderFallback" : "_remoteMethodExecution"} can only be used while the tool is running`));
    const rpcId = ++rpcSeq;
    return new Promise((resolve, reject) => {
      pending.set(rpcId, { resolve, reject, onChunk });
      send({ t: "rpc", id, rpcId, method, params });
    });
  };

  installVeilcli({
    callWithProviderFallback: async (options: Record<string, any> = {}) => {
      // settings/env/signal stay on the server side: the server calls with the real settings.
      const params = {
        modelId: options.modelId,
        messages: options.messages,
        reasoning: options.reasoning,
        tools: options.tools,
        maxTokens: options.maxTokens,
        temperature: options.temperature,
        stream: typeof options.onChunk === "function",
      };
      const result = await rpc("llm", params, typeof options.onChunk === "function" ? options.onChunk : undefined);
      await providerApiLoaded;
      return result;
    },
    extractMessage: (response: unknown) => {
      if (!providerApi) throw new Error("veilcli is still loading in this tool process; call extractMessage on a callWithProviderFallback result");
      return providerApi.extractMessage(response);
    },
  });

  const load = (file: string, version: string): ExecuteFn => {
    const hit = loaded.get(file);
    if (hit && hit.version === version) return hit.execute;
    const folder = dirname(file) + sep;
    for (const key of Object.keys(ModuleInternals._cache)) if (key.startsWith(folder)) delete ModuleInternals._cache[key];
    // Compiled as CommonJS whatever the surrounding package.json says: tool folders are promised that.
    const mod = new ModuleInternals(file, null);
    mod.filename = file;
    mod.paths = ModuleInternals._nodeModulePaths(dirname(file));
    mod._compile(readFileSync(file, "utf8"), file);
    mod.loaded = true;
    const exported = mod.exports as any;
    const execute: unknown = typeof exported === "function" ? exported : exported?.execute;
    if (typeof execute !== "function") {
      throw new Error(`${file} must export the execute function: module.exports = async function execute(input) { … }`);
    }
    loaded.set(file, { version, execute: execute as ExecuteFn });
    return execute as ExecuteFn;
  };

  const inject = (id: number, input: Record<string, unknown>, context: CallContext): Record<string, unknown> => ({
    ...input,
    _cwd: context.cwd,
    _agent: context.agent,
    _sessionId: context.sessionId,
    _settings: context.settings,
    _modelKey: context.modelKey,
    _emitToolChunk: (chunk: unknown) => {
      if (current === id) send({ t: "chunk", id, chunk: typeof chunk === "string" ? chunk : String(chunk) });
    },
    _remoteMethodExecution: (request: { method?: unknown; data?: unknown; timeoutMs?: unknown } = {}) =>
      rpc("remote", { method: request.method, data: request.data, timeoutMs: request.timeoutMs }),
  });

  const run = async (message: Extract<ParentMessage, { t: "call" }>) => {
    current = message.id;
    try {
      const execute = load(message.file, message.version);
      const value = await execute(inject(message.id, message.input, message.context));
      const out: ChildMessage = { t: "result", id: message.id, ok: true, value: value === undefined ? null : value };
      try {
        JSON.stringify(out);
      } catch (error) {
        throw new Error(`the tool returned a value that cannot be sent as JSON (${(error as Error).message})`);
      }
      send(out);
    } catch (error) {
      send({ t: "result", id: message.id, ok: false, error: serializeError(error) });
    } finally {
      if (current === message.id) current = null;
      for (const [rpcId, waiting] of pending) {
        pending.delete(rpcId);
        waiting.reject(new Error("the tool call ended"));
      }
    }
  };

  process.on("message", (message: ParentMessage) => {
    switch (message?.t) {
      case "call":
        void run(message);
        return;
      case "rpc-chunk":
        pending.get(message.rpcId)?.onChunk?.(message.text);
        return;
      case "rpc-result": {
        const waiting = pending.get(message.rpcId);
        if (!waiting) return;
        pending.delete(message.rpcId);
        if (message.ok) waiting.resolve(message.value);
        else waiting.reject(Object.assign(new Error(message.error.message), { name: message.error.name, code: message.error.code }));
        return;
      }
    }
  });
  const fatal = (error: unknown) => {
    if (current === null) {
      send({ t: "stray", error: serializeError(error) });
      return;
    }
    send({ t: "fatal", id: current, error: serializeError(error) });
    process.exitCode = 1;
    setImmediate(() => process.exit(1));
  };
  process.on("uncaughtException", fatal);
  process.on("unhandledRejection", fatal);
  const proxySocket = process.argv.find((arg) => arg.startsWith(PROXY_SOCKET_ARG))?.slice(PROXY_SOCKET_ARG.length);
  if (!proxySocket) return send({ t: "ready", pid: process.pid });
  // In a sandbox whose network is the allowlist proxy, HTTP clients find it on the sandbox's own
  // loopback: a forwarder in a thread of its own, which a tool blocking this one (execSync) cannot stall.
  const forwarder = new Worker(new URL("../shared/sandbox/forwarder-main.js", import.meta.url), { argv: [proxySocket, String(PROXY_PORT)] });
  forwarder.once("message", () => send({ t: "ready", pid: process.pid }));
  forwarder.once("exit", () => process.exit(1));
  forwarder.unref();
}

/** Makes `require("veilcli")` (and `veilcli/...`) return `api` in every tool module. */
function installVeilcli(api: Record<string, unknown>): void {
  const id = join(dirname(fileURLToPath(import.meta.url)), "veilcli-in-tool.virtual.js");
  const mod = new ModuleInternals(id, null);
  mod.filename = id;
  mod.exports = Object.freeze({ ...api });
  mod.loaded = true;
  ModuleInternals._cache[id] = mod;
  const resolve = ModuleInternals._resolveFilename;
  ModuleInternals._resolveFilename = function (this: unknown, request: string, parent: unknown, isMain: boolean, options?: unknown) {
    if (request === "veilcli" || request.startsWith("veilcli/")) return id;
    return resolve.call(this, request, parent, isMain, options);
  };
}

void main();
