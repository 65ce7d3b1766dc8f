import { afterEach, describe, expect, it, vi } from "vitest";
import { tracesConfig } from "../../../src/core/telemetry/load.js";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import { hang, reply } from "../../helpers/fake-llm.js";
import { createRuntime } from "../../../src/runtime.js";
import { memoryLogger } from "../../../src/base/log.js";
import { VeilClient } from "../../../src/client/index.js";
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from "../../helpers/otlp-collector.js";

let h: RuntimeHarness | undefined;
let collector: OtlpCollector | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await collector?.close();
  collector = undefined;
});

const COST = { "fake-model": { cost: { input: 1, output: 2 } } };
const traceEnv = (url: string, protocol = "http/json") => ({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_BSP_SCHEDULE_DELAY: "20" });
const named = (spans: CollectedSpan[], name: string) => spans.filter((s) => s.name === name);

describe("traces over OTLP/HTTP", () => {
  it("sends invoke_agent, chat and execute_tool spans with GenAI attributes, under a chat request's traceparent", async () => {
    collector = await startOtlpCollector();
    h = await createRuntimeHarness({ files: { "a.md": "# a\n" }, env: traceEnv(collector.url), models: COST });
    const server = await h.serve();
    const session = (await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json()) as { id: string };
    h.llm.enqueue(reply().tool("glob", { pattern: "*.md" }, { id: "call_glob" }).tool("read_file", { file: "missing.txt" }, { id: "call_read" }).usage({ prompt_tokens: 1000, completion_tokens: 100, cached_tokens: 400 }).stop());
    h.llm.enqueue(reply().text("done").usage({ prompt_tokens: 2000, completion_tokens: 10 }).stop());
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const client = new VeilClient({ baseUrl: server.url, secret: "test-secret" });
    expect((await client.chat(session.id, "look", { traceparent: `00-${traceId}-${callerSpan}-01` })).content).toBe("done");

    const spans = await collector.waitFor((all) => named(all, "invoke_agent default").length === 1);
    const turn = named(spans, "invoke_agent default")[0]!;
    expect(turn).toMatchObject({ traceId, parentSpanId: callerSpan, status: { code: 0 } });
    expect(turn.attributes).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "default", "gen_ai.request.model": "fake-model", "veil.session_id": session.id, "veil.stop_reason": "stop", "gen_ai.usage.input_tokens": 3000, "gen_ai.usage.output_tokens": 110 });
    expect(turn.resource["service.name"]).toBe("veil");

    const chats = named(spans, "chat fake-model");
    expect(chats).toHaveLength(2);
    for (const span of chats) expect(span).toMatchObject({ traceId, parentSpanId: turn.spanId, kind: 3 });
    expect(chats[0]!.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "fake-model",
      "gen_ai.usage.input_tokens": 1000,
      "gen_ai.usage.output_tokens": 100,
      "gen_ai.usage.cache_read.input_tokens": 400,
      "gen_ai.response.finish_reasons": ["tool_calls"],
      "veil.cost_usd": (1000 * 1 + 100 * 2) / 1e6,
      "veil.session_id": session.id,
    });

    const glob = named(spans, "execute_tool glob")[0]!;
    const read = named(spans, "execute_tool read_file")[0]!;
    expect(glob).toMatchObject({ traceId, parentSpanId: turn.spanId, status: { code: 0 } });
    expect(glob.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "glob", "gen_ai.tool.call.id": "call_glob", "veil.session_id": session.id });
    expect(read.attributes["gen_ai.tool.call.id"]).toBe("call_read");
    expect(read.status.code).toBe(2);
    expect(read.status.message).toMatch(/^Error: FILE_NOT_FOUND — /);
    expect(read.attributes["error.type"]).toBe("FILE_NOT_FOUND");
    for (const span of spans) expect(span.attributes["veil.session_id"], span.name).toBe(session.id);
  });

  it("hangs a sub-agent's turn under the agent_spawn call that started it, in one trace", async () => {
    collector = await startOtlpCollector();
    h = await createRuntimeHarness({ env: traceEnv(collector.url) });
    h.llm.enqueue(reply().tool("agent_spawn", { agent: "default", instance_name: "helper", objective: "say hi", initial_message: { message: "hi?" } }, { id: "call_spawn" }).stop());
    h.llm.enqueue(reply().text("hi from the helper").stop());
    h.llm.enqueue(reply().text("the helper said hi").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    expect((await (await h.runtime.sessions.send(session.id, "spawn a helper")).result).content).toBe("the helper said hi");

    const spans = await collector.waitFor((all) => named(all, "invoke_agent default").length === 2);
    const turns = named(spans, "invoke_agent default");
    const parent = turns.find((t) => t.attributes["veil.session_id"] === session.id)!;
    const child = turns.find((t) => t.attributes["veil.session_id"] !== session.id)!;
    const spawn = named(spans, "execute_tool agent_spawn")[0]!;
    expect(parent.parentSpanId).toBe("");
    expect(spawn).toMatchObject({ traceId: parent.traceId, parentSpanId: parent.spanId });
    expect(child).toMatchObject({ traceId: parent.traceId, parentSpanId: spawn.spanId });
    const childChat = spans.find((s) => s.name === "chat fake-model" && s.attributes["veil.session_id"] === child.attributes["veil.session_id"])!;
    expect(childChat.parentSpanId).toBe(child.spanId);
  });

  it("a sub-agent's message left queued by a restart starts its run under the call that sent it", async () => {
    collector = await startOtlpCollector();
    h = await createRuntimeHarness({ files: { "a.md": "# a\n" }, env: traceEnv(collector.url) });
    const parent = await h.runtime.sessions.create({ agent: "default" });
    const child = await h.runtime.sessions.create({ agent: "default" });
    h.llm.enqueue(reply().tool("glob", { pattern: "*.md" }, { id: "call_glob" }).stop());
    h.llm.enqueue(reply().text("sent").stop());
    await (await h.runtime.sessions.send(parent.id, "tell the child")).result;
    // The child is busy (its model call never answers), so the parent's message waits in its inbox…
    h.llm.enqueue(hang());
    void h.runtime.sessions.send(child.id, "work").then((receipt) => receipt.result.catch(() => undefined));
    await expect.poll(async () => (await h!.runtime.store.getSession(child.id))?.status).toBe("running");
    const queued = await h.runtime.sessions.send(child.id, "are you there?", { meta: { source: "agent", fromSessionId: parent.id, fromToolCallId: "call_glob" } });
    expect(queued.delivery).toBe("queued");

    // …when the server restarts: a new process has no span of the parent's call in memory.
    h.llm.enqueue(reply().text("here").stop());
    const restarted = await createRuntime({ workspace: h.ws.root, env: h.env, log: memoryLogger(), store: h.runtime.store, bus: h.runtime.bus, start: false });
    const done = new Promise<void>((resolve) => h!.runtime.bus.subscribe({ sessionId: child.id, types: ["chat.done"] }, () => resolve()));
    await restarted.start();
    await done;
    await restarted.sessions.shutdown();
    await restarted.telemetry!.close();

    const spans = await collector.waitFor((all) => named(all, "invoke_agent default").some((t) => t.attributes["veil.session_id"] === child.id && t.attributes["veil.stop_reason"] === "stop"));
    const glob = named(spans, "execute_tool glob")[0]!;
    const resumed = named(spans, "invoke_agent default").find((t) => t.attributes["veil.session_id"] === child.id && t.attributes["veil.stop_reason"] === "stop")!;
    expect(resumed).toMatchObject({ traceId: glob.traceId, parentSpanId: glob.spanId });
  });

  it("speaks http/protobuf too (the default protocol)", async () => {
    collector = await startOtlpCollector();
    h = await createRuntimeHarness({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: "20" } });
    h.llm.enqueue(reply().text("hello").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "hi")).result;
    await h.runtime.telemetry!.close();
    const proto = collector.exports.filter((e) => e.contentType === "application/x-protobuf");
    expect(proto.length).toBeGreaterThan(0);
    const bytes = Buffer.concat(proto.map((e) => e.body));
    // Protobuf keeps strings as they are: the span names and the session id are in the bytes.
    for (const text of ["invoke_agent default", "chat fake-model", session.id]) expect(bytes.includes(Buffer.from(text)), text).toBe(true);
  });

  it("costs a dead collector one warning: turns run as before", async () => {
    collector = await startOtlpCollector();
    const url = collector.url;
    await collector.close();
    collector = undefined;
    h = await createRuntimeHarness({ env: { ...traceEnv(url), OTEL_EXPORTER_OTLP_TIMEOUT: "500" } });
    const session = await h.runtime.sessions.create({ agent: "default" });
    for (const text of ["one", "two", "three"]) {
      h.llm.enqueue(reply().text(text).stop());
      expect((await (await h.runtime.sessions.send(session.id, "go")).result).content).toBe(text);
    }
    await vi.waitFor(() => expect(h!.log.entries.some((e) => e.message.startsWith("telemetry: traces cannot be sent"))).toBe(true), { timeout: 20_000, interval: 50 });
    await h.runtime.telemetry!.close();
    expect(h.log.entries.filter((e) => e.message.startsWith("telemetry: traces cannot be sent"))).toHaveLength(1);
    expect(h.log.entries.filter((e) => e.level === "error")).toEqual([]);
  });
});

describe("where traces go", () => {
  it("reads the OTEL_* variables over settings.telemetry, and is off with neither", () => {
    expect(tracesConfig({}, undefined)).toBeNull();
    expect(tracesConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "" }, {})).toBeNull();
    expect(tracesConfig({}, { otlpEndpoint: "http://collector:4318/", protocol: "http/json", headers: { "x-key": "s" }, serviceName: "agents" })).toEqual({
      url: "http://collector:4318/v1/traces",
      protocol: "http/json",
      headers: { "x-key": "s" },
      serviceName: "agents",
      scheduledDelayMs: 1000,
      exportTimeoutMs: 10000,
    });
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://env:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_HEADERS: "x-key=from%20env,other=1",
      OTEL_SERVICE_NAME: "svc",
      OTEL_BSP_SCHEDULE_DELAY: "250",
      OTEL_EXPORTER_OTLP_TIMEOUT: "3000",
    };
    expect(tracesConfig(env, { otlpEndpoint: "http://settings:4318", protocol: "http/json", headers: { "x-key": "s", kept: "yes" } })).toEqual({
      url: "http://env:4318/v1/traces",
      protocol: "http/protobuf",
      headers: { "x-key": "from env", other: "1", kept: "yes" },
      serviceName: "svc",
      scheduledDelayMs: 250,
      exportTimeoutMs: 3000,
    });
    expect(tracesConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://exact/traces" }, undefined)?.url).toBe("http://exact/traces");
  });

  it("sends a turn's spans to settings.telemetry.otlpEndpoint with no OTEL_* variable set", async () => {
    collector = await startOtlpCollector();
    h = await createRuntimeHarness({ settings: { telemetry: { otlpEndpoint: collector.url, protocol: "http/json", serviceName: "from-settings" } } });
    h.llm.enqueue(reply().text("hi").stop());
    const session = await h.runtime.sessions.create({ agent: "default" });
    await (await h.runtime.sessions.send(session.id, "hi")).result;
    await h.runtime.telemetry!.close();
    expect(collector.spans.map((s) => [s.name, s.resource["service.name"]])).toEqual([
      ["chat fake-model", "from-settings"],
      ["invoke_agent default", "from-settings"],
    ]);
  });

  it("refuses a settings.telemetry it cannot use with CONFIG_ERROR naming the key", async () => {
    await expect(createRuntimeHarness({ settings: { telemetry: { otlpEndpoint: "http://x", protocol: "grpc" } } })).rejects.toMatchObject({ code: "CONFIG_ERROR", message: expect.stringContaining("protocol") });
  });
});
