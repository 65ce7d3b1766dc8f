import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { RegisteredTool } from "../../../src/tools/types.js";
import { builtinDefaultAgent, defaultSandbox } from "../../../src/config/defaults.js";
import { memoryLogger } from "../../../src/base/log.js";
import { normaliseOutcome } from "../../../src/tools/outcome.js";
import { createCustomToolSource, type FolderToolSource } from "../../../src/tools/custom/source.js";
import type { RemoteMethods } from "../../../src/tools/custom/remote-methods.js";
import { createToolHarness, type ToolHarness } from "../../helpers/tool-context.js";
import { reply, startFakeLlm, type FakeLlm } from "../../helpers/fake-llm.js";
import { writeTool } from "./tool-folders.js";
import { ensureBuiltRunner } from "./built-runner.js";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("custom tool execution in child processes", { timeout: 60_000 }, () => {
  let h: ToolHarness;
  let llm: FakeLlm;
  let source: FolderToolSource;
  let tools: Map<string, RegisteredTool>;
  const remoteCalls: unknown[] = [];
  const remoteMethods: RemoteMethods = {
    async execute(req) {
      remoteCalls.push({ sessionId: req.sessionId, method: req.method, data: req.data, timeoutMs: req.timeoutMs, hasSignal: req.signal instanceof AbortSignal });
      return { answer: 42 };
    },
  };

  beforeAll(async () => {
    await ensureBuiltRunner();
    llm = await startFakeLlm();
    h = await createToolHarness({
      modelKey: "fake/small-model",
      settings: {
        providers: {
          fake: { type: "openai", baseUrl: llm.baseUrl, apiKey: "sk-very-secret", headers: { "X-Api-Key": "sk-very-secret", "X-Title": "veil" } },
          other: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", apiKeyEnv: "OTHER_KEY" },
        },
        defaultProvider: "fake",
        myService: { url: "http://svc", accessToken: "tok-1", password: "pw", nested: { clientSecret: "cs", keep: 1 } },
        // The pool's mechanics, observed through the host PIDs tools report: sandboxed tool
        // processes are in a PID namespace of their own (custom-sandbox.test.ts covers them).
        sandbox: { ...defaultSandbox(), mode: "off" },
      },
    });
    const dir = h.ws.path(".veil", "tools");
    writeTool(dir, { name: "echo_upper", properties: { message: { type: "string" } }, required: ["message"], timeout: 5, body: "return input.message.toUpperCase();" });
    writeTool(dir, {
      name: "show_context",
      properties: { message: { type: "string" } },
      body: `const { _emitToolChunk, _remoteMethodExecution, ...rest } = input;
      return JSON.stringify({ ...rest, pid: process.pid, fns: [typeof _emitToolChunk, typeof _remoteMethodExecution], envKeys: Object.keys(process.env).filter((k) => k === "VEIL_API_KEY") });`,
    });
    writeTool(dir, { name: "multimodal", body: "return { text: 'a picture', attachments: [{ type: 'image', media_type: 'image/png', data: 'iVBORw0KGgo=' }] };" });
    writeTool(dir, { name: "legacy_blocks", body: "return { contentBlocks: [{ type: 'text', text: 'hello' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }], displayText: 'shown' };" });
    writeTool(dir, { name: "streamer", body: "input._emitToolChunk('one '); input._emitToolChunk('two'); return 'streamed';" });
    writeTool(dir, { name: "thrower", body: "throw new RangeError('the value is out of range');" });
    writeTool(dir, { name: "hangs", timeout: 1, body: "input._emitToolChunk('started ' + process.pid); await new Promise(() => {});" });
    writeTool(dir, { name: "spins", timeout: 1, body: "input._emitToolChunk('started ' + process.pid); for (;;) {}" });
    writeTool(dir, { name: "exits", body: "process.exit(3);" });
    writeTool(dir, { name: "late_throw", body: "setTimeout(() => { throw new Error('late boom'); }, 0); return String(process.pid);" });
    writeTool(dir, { name: "async_throw", body: "setTimeout(() => { throw new Error('timer boom'); }, 0); await new Promise(() => {});" });
    writeTool(dir, { name: "leaks", timeout: 60, body: "const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random()));" });
    writeTool(dir, { name: "pid", body: "return String(process.pid);" });
    writeTool(dir, { name: "wait_file", timeout: 20, properties: { path: { type: "string" } }, body: "const fs = require('fs'); while (!fs.existsSync(input.path)) await new Promise((r) => setTimeout(r, 5)); return 'seen ' + process.pid;" });
    writeTool(dir, { name: "make_file", properties: { path: { type: "string" } }, body: "require('fs').writeFileSync(input.path, 'x'); return 'made ' + process.pid;" });
    writeTool(dir, {
      name: "summarize_text",
      timeout: 20,
      properties: { text: { type: "string" } },
      raw: `'use strict';
const { callWithProviderFallback, extractMessage } = require('veilcli');
module.exports = async function execute({ text, _settings, _modelKey, _emitToolChunk }) {
  if (!_modelKey) return 'Error: TOOL_CONTEXT_INVALID — _modelKey not injected';
  try {
    const result = await callWithProviderFallback({
      settings: _settings,
      modelId: _modelKey,
      messages: [{ role: 'system', content: 'Summarize.' }, { role: 'user', content: text }],
      reasoning: { effort: 'low' },
      onChunk: (t) => _emitToolChunk('[' + t + ']'),
    });
    const { content, finishReason } = extractMessage(result.response);
    return (content && content.trim()) + ' (' + finishReason + ')';
  } catch (err) {
    return 'Error: LLM_ERROR — ' + err.message;
  }
};`,
    });
    writeTool(dir, { name: "ask_ui", timeout: 130, body: "return JSON.stringify(await input._remoteMethodExecution({ method: 'user-dialog', data: { q: input.q } }));", properties: { q: { type: "string" } } });
    writeTool(dir, { name: "ask_ui_safe", timeout: 130, body: "try { await input._remoteMethodExecution({ method: 'x', data: {} }); return 'answered'; } catch (err) { return 'no UI: ' + err.message; }" });

    source = createCustomToolSource({ config: h.config, log: memoryLogger(), resources: h.runtimeResources, maxOldSpaceMb: 64 });
    tools = new Map((await source.discover(builtinDefaultAgent())).map((t) => [t.name, t]));
  }, 180_000);
  afterAll(async () => {
    await h.close();
    await llm.close();
  });

  /** Resolves with the pid a tool announces in its first chunk ("started <pid>"). */
  const announcedPid = () =>
    new Promise<number>((resolve) => {
      const off = h.bus.subscribe({}, (e) => {
        const chunk = e.type === "tool.chunk" ? (e as { chunk: string }).chunk : "";
        if (chunk.startsWith("started ")) {
          off();
          resolve(Number(chunk.slice(8)));
        }
      });
    });

  const tool = (name: string) => {
    const found = tools.get(name);
    if (!found) throw new Error(`no tool ${name}`);
    return found;
  };

  it("runs the README's echo_upper example in another process", async () => {
    const result = await h.call(tool("echo_upper"), { message: "hello" });
    expect(result).toMatchObject({ output: "HELLO", success: true });
    const pid = Number((await h.call(tool("pid"), {})).output);
    expect(pid).toBeGreaterThan(0);
    expect(pid).not.toBe(process.pid);
  });

  it("injects the context fields, drops the model's _-prefixed keys and strips secrets from _settings", async () => {
    const result = await h.call(tool("show_context"), { message: "hi", _cwd: "/evil", _sessionId: "forged", _extra: 1, constructor: "x" } as Record<string, unknown>);
    expect(result.success).toBe(true);
    const seen = JSON.parse(result.output);
    expect(seen.message).toBe("hi");
    expect(seen._cwd).toBe(h.ws.root);
    expect(seen._sessionId).toBe(h.sessionId);
    expect(seen._extra).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(seen, "constructor")).toBe(false);
    expect(seen._modelKey).toBe("fake/small-model");
    expect(seen._agent).toMatchObject({ name: "default", agentFolder: null });
    expect(seen._agent.modes.chat).toBeDefined();
    expect(seen.fns).toEqual(["function", "function"]);
    expect(seen.envKeys).toEqual([]);
    const settings = seen._settings;
    expect(settings.providers.fake.baseUrl).toBe(llm.baseUrl);
    expect(settings.providers.fake.apiKey).toBeUndefined();
    expect(settings.providers.fake.headers).toEqual({ "X-Title": "veil" });
    expect(settings.providers.other.apiKeyEnv).toBe("OTHER_KEY");
    expect(settings.myService).toEqual({ url: "http://svc", nested: { keep: 1 } });
    expect(settings.budget).toBeDefined();
    expect(result.output).not.toContain("sk-very-secret");
  });

  it("passes every return shape through raw for the loop to normalise", async () => {
    const multimodal = await tool("multimodal").execute({}, h.context());
    expect(multimodal).toEqual({ text: "a picture", attachments: [{ type: "image", media_type: "image/png", data: "iVBORw0KGgo=" }] });
    expect(normaliseOutcome(multimodal)).toEqual({ output: "a picture", attachments: [{ type: "image", media_type: "image/png", data: "iVBORw0KGgo=" }] });
    const legacy = await tool("legacy_blocks").execute({}, h.context());
    expect(normaliseOutcome(legacy)).toEqual({ output: "shown", attachments: [{ type: "image", media_type: "image/png", data: "AAAA" }] });
    expect(await tool("echo_upper").execute({ message: "abc" }, h.context())).toBe("ABC");
  });

  it("streams _emitToolChunk to the bus as tool.chunk before the result", async () => {
    const before = h.events.length;
    const result = await h.call(tool("streamer"), {});
    expect(result.output).toBe("streamed");
    const chunks = h.events.slice(before).filter((e) => e.type === "tool.chunk").map((e) => (e as { chunk: string }).chunk);
    expect(chunks).toEqual(["one ", "two"]);
  });

  it("turns a thrown error into an error result and keeps the process for the next call", async () => {
    const pidBefore = (await h.call(tool("pid"), {})).output;
    const result = await h.call(tool("thrower"), {});
    expect(result.success).toBe(false);
    expect(result.output).toBe('Error: TOOL_ERROR — custom tool "thrower" failed: RangeError: the value is out of range');
    expect((await h.call(tool("pid"), {})).output).toBe(pidBefore);
  });

  it("kills a hanging tool at its timeout with TOOL_TIMEOUT, then serves the next call", async () => {
    const pid = announcedPid();
    const result = await h.call(tool("hangs"), {});
    expect(result.success).toBe(false);
    expect(result.output).toMatch(/^Error: TOOL_TIMEOUT — custom tool "hangs" did not finish within 1 s/);
    expect(alive(await pid)).toBe(false);
    expect((await h.call(tool("echo_upper"), { message: "after" })).output).toBe("AFTER");
  });

  it("kills a CPU-looping tool at its timeout; its process is gone", async () => {
    const pid = announcedPid();
    const result = await h.call(tool("spins"), {});
    expect(result.output).toMatch(/^Error: TOOL_TIMEOUT — /);
    expect(alive(await pid)).toBe(false);
    expect(source.processIds()).not.toContain(await pid);
    expect((await h.call(tool("echo_upper"), { message: "still here" })).output).toBe("STILL HERE");
  });

  it("reports process.exit() clearly and replaces the process", async () => {
    const result = await h.call(tool("exits"), {});
    expect(result.success).toBe(false);
    expect(result.output).toMatch(/custom tool "exits" ended its process \(exit code 3\) before returning a result/);
    expect((await h.call(tool("echo_upper"), { message: "next" })).output).toBe("NEXT");
  });

  it("fails the call when an exception escapes its promise, instead of hanging to the timeout", async () => {
    const result = await h.call(tool("async_throw"), {});
    expect(result.output).toBe('Error: TOOL_ERROR — custom tool "async_throw" failed: timer boom');
    expect((await h.call(tool("echo_upper"), { message: "fine" })).output).toBe("FINE");
  });

  it("logs an exception that escapes after a call returned and keeps serving", async () => {
    const result = await h.call(tool("late_throw"), {});
    expect(result.output).toMatch(/^\d+$/);
    const pid = Number(result.output);
    // Several calls right after: none is failed by the stray error.
    for (let i = 0; i < 5; i++) expect((await h.call(tool("echo_upper"), { message: `n${i}` })).output).toBe(`N${i}`);
    expect(alive(pid)).toBe(true);
  });

  it("lets a memory-leaking tool die alone under its heap cap", async () => {
    const result = await h.call(tool("leaks"), {});
    expect(result.success).toBe(false);
    expect(result.output).toMatch(/custom tool "leaks" ended its process/);
    expect((await h.call(tool("echo_upper"), { message: "alive" })).output).toBe("ALIVE");
  });

  it("kills the process running a call when the call's signal aborts", async () => {
    const controller = new AbortController();
    const started = announcedPid();
    const call = tool("hangs").execute({}, h.context({ signal: controller.signal }));
    const pid = await started;
    expect(alive(pid)).toBe(true);
    controller.abort(new Error("user cancelled"));
    await expect(call).rejects.toThrow("user cancelled");
    expect(alive(pid)).toBe(false);
    expect((await h.call(tool("echo_upper"), { message: "ok" })).output).toBe("OK");
  });

  it("runs calls in parallel in different processes", async () => {
    const flag = join(h.ws.root, "flag.txt");
    const waiting = h.call(tool("wait_file"), { path: flag });
    const making = h.call(tool("make_file"), { path: flag });
    const [waited, made] = await Promise.all([waiting, making]);
    expect(waited.output).toMatch(/^seen \d+$/);
    expect(made.output).toMatch(/^made \d+$/);
    expect(waited.output.split(" ")[1]).not.toBe(made.output.split(" ")[1]);
  });

  it("require('veilcli') runs the documented LLM example; the server makes the call with the real key", async () => {
    llm.enqueue(reply().text("A short ").text("summary.").stop());
    const before = h.events.length;
    const result = await h.call(tool("summarize_text"), { text: "long text" });
    expect(result.output).toBe("A short summary. (stop)");
    const request = llm.completionRequests.at(-1)!;
    expect(request.headers.authorization).toBe("Bearer sk-very-secret");
    expect(request.body.model).toBe("small-model");
    expect(request.body.messages.at(-1)).toMatchObject({ role: "user", content: "long text" });
    const chunks = h.events.slice(before).filter((e) => e.type === "tool.chunk").map((e) => (e as { chunk: string }).chunk);
    expect(chunks.join("")).toBe("[A short ][summary.]");
  });

  it("forwards _remoteMethodExecution to services.remoteMethods with the session and default timeout", async () => {
    remoteCalls.length = 0;
    const result = await h.call(tool("ask_ui"), { q: "continue?" }, { services: { remoteMethods } });
    expect(result.output).toBe('{"answer":42}');
    expect(remoteCalls).toEqual([{ sessionId: h.sessionId, method: "user-dialog", data: { q: "continue?" }, timeoutMs: 120_000, hasSignal: true }]);
  });

  it("rejects _remoteMethodExecution clearly when no remote-method service exists", async () => {
    const result = await h.call(tool("ask_ui_safe"), {});
    expect(result.output).toMatch(/^no UI: _remoteMethodExecution is not available/);
  });
});
