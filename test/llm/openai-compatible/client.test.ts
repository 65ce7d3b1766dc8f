import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ProviderConfig } from "../../../src/config/types.js";
import { createOpenAiProvider } from "../../../src/llm/openai-compatible/client.js";
import { nodeHttpTransport } from "../../../src/llm/openai-compatible/http-transport.js";
import type { LlmRequest, StreamEvent } from "../../../src/llm/types.js";
import { hang, httpError, replay, reply, replayFixture, startFakeLlm, type FakeLlm } from "../../helpers/fake-llm.js";

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

function last(events: StreamEvent[]): StreamEvent {
  return events[events.length - 1]!;
}

function terminal<T extends "done" | "error">(events: StreamEvent[], type: T): Extract<StreamEvent, { type: T }> {
  const end = last(events);
  expect(end.type).toBe(type);
  expect(events.filter((e) => e.type === "done" || e.type === "error")).toHaveLength(1);
  return end as Extract<StreamEvent, { type: T }>;
}

describe("openai-compatible provider", () => {
  let llm: FakeLlm;
  let config: ProviderConfig;
  const request = (over: Partial<LlmRequest> = {}): LlmRequest => ({ model: "m1", messages: [{ role: "user", content: "hi" }], ...over });
  beforeEach(async () => {
    llm = await startFakeLlm();
    config = { type: "openai", baseUrl: llm.baseUrl, apiKeyEnv: "FAKE_KEY" };
  });
  afterEach(async () => {
    await llm.close();
  });
  const provider = (over: Partial<ProviderConfig> = {}) => createOpenAiProvider("fake", { ...config, ...over }, { env: { FAKE_KEY: "sk-test" } });

  it("streams text and reassembles tool-call arguments split across chunks", async () => {
    llm.enqueue(reply().text("Hel").text("lo").tool("read_file", { file: "/x" }, { fragments: 4 }).tool("bash", { command: "ls -la" }).stop());
    const events = await collect(provider().stream(request()));
    const texts = events.filter((e) => e.type === "text").map((e) => (e as { delta: string }).delta);
    expect(texts).toEqual(["Hel", "lo"]);
    const starts = events.filter((e) => e.type === "tool_call_start");
    expect(starts).toEqual([
      { type: "tool_call_start", index: 0, id: "call_0_read_file", name: "read_file" },
      { type: "tool_call_start", index: 1, id: "call_1_bash", name: "bash" },
    ]);
    const deltas0 = events.filter((e) => e.type === "tool_call_delta" && e.index === 0);
    expect(deltas0.length).toBeGreaterThan(1);
    // the start arrives before any of its argument fragments
    expect(events.indexOf(starts[0]!)).toBeLessThan(events.indexOf(deltas0[0]!));
    const done = terminal(events, "done");
    expect(done.finishReason).toBe("tool_calls");
    expect(done.message.content).toBe("Hello");
    expect(done.message.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ["read_file", { file: "/x" }],
      ["bash", { command: "ls -la" }],
    ]);
  });

  it("streams reasoning_content and reasoning deltas as thinking", async () => {
    llm.enqueue(reply().thinking("let me ").thinking("think").text("4").stop());
    llm.enqueue(reply().reasoningField("reasoning").thinking("other field").text("5").stop());
    const a = await collect(provider().stream(request()));
    expect(a.filter((e) => e.type === "thinking").map((e) => (e as { delta: string }).delta)).toEqual(["let me ", "think"]);
    expect(terminal(a, "done").message).toEqual({ content: "4", thinking: "let me think", toolCalls: [] });
    const b = await collect(provider().stream(request()));
    expect(terminal(b, "done").message.thinking).toBe("other field");
  });

  it("maps usage including cached, cache-write and reasoning tokens", async () => {
    llm.enqueue(reply().text("x").usage({ prompt_tokens: 10, completion_tokens: 5, cached_tokens: 3, cache_write_tokens: 2, reasoning_tokens: 1 }).stop());
    const done = terminal(await collect(provider().stream(request())), "done");
    expect(done.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cached_tokens: 3, cache_creation_tokens: 2, reasoning_tokens: 1 });
  });

  it("sends the wire request: auth from env, tools, reasoning_effort, stream_options, media", async () => {
    llm.enqueue(reply().text("ok").stop());
    await collect(
      provider().stream(
        request({
          messages: [
            { role: "system", content: "sys" },
            { role: "user", content: [{ type: "text", text: "see" }, { type: "image", mediaType: "image/png", data: "AAAA" }] },
            { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "read_file", arguments: '{"file":"a.png"}' }, { id: "c2", name: "bash", arguments: "{}" }] },
            { role: "tool", toolCallId: "c1", content: [{ type: "text", text: "image read" }, { type: "image", mediaType: "image/png", data: "BBBB" }] },
            { role: "tool", toolCallId: "c2", content: [{ type: "text", text: "done" }, { type: "audio", mediaType: "audio/mpeg", data: "CCCC" }] },
          ],
          tools: [{ name: "read_file", description: "Read", parameters: { type: "object", properties: {} } }],
          reasoning: { effort: "low" },
        }),
      ),
    );
    const [req] = await llm.waitForRequests(1);
    expect(req!.headers.authorization).toBe("Bearer sk-test");
    const body = req!.body;
    expect(body).toMatchObject({ model: "m1", stream: true, stream_options: { include_usage: true }, reasoning_effort: "low" });
    expect(body.tools).toEqual([{ type: "function", function: { name: "read_file", description: "Read", parameters: { type: "object", properties: {} } } }]);
    expect(body.messages.map((m: { role: string }) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool", "user"]);
    expect(body.messages[1].content[1]).toEqual({ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } });
    expect(body.messages[2].tool_calls[0]).toEqual({ id: "c1", type: "function", function: { name: "read_file", arguments: '{"file":"a.png"}' } });
    expect(body.messages[3]).toMatchObject({ role: "tool", tool_call_id: "c1" });
    expect(body.messages[3].content).toContain("image read");
    const media = body.messages[5].content;
    expect(media).toContainEqual({ type: "image_url", image_url: { url: "data:image/png;base64,BBBB" } });
    expect(media).toContainEqual({ type: "input_audio", input_audio: { data: "CCCC", format: "mp3" } });
  });

  it("classifies 429 with Retry-After seconds as retryable RATE_LIMITED", async () => {
    llm.enqueue(httpError(429, { retryAfter: "2", message: "slow down" }));
    const error = terminal(await collect(provider().stream(request())), "error").error;
    expect(error).toMatchObject({ code: "RATE_LIMITED", status: 429, retryable: true, retryAfterMs: 2000 });
    expect(error.message).toContain("slow down");
  });

  it("parses an HTTP-date Retry-After", async () => {
    const now = Date.UTC(2026, 0, 1, 0, 0, 0);
    llm.enqueue(httpError(503, { retryAfter: new Date(now + 5000).toUTCString() }));
    const p = createOpenAiProvider("fake", config, { env: { FAKE_KEY: "k" }, now: () => now });
    const error = terminal(await collect(p.stream(request())), "error").error;
    expect(error).toMatchObject({ code: "PROVIDER_ERROR", status: 503, retryable: true, retryAfterMs: 5000 });
  });

  it.each([
    [400, "VALIDATION_ERROR"],
    // The provider refused Veil's key: a provider failure, never Veil's own UNAUTHORIZED.
    [401, "LLM_ERROR"],
    [403, "LLM_ERROR"],
    [404, "MODEL_NOT_FOUND"],
  ])("classifies HTTP %i as non-retryable %s", async (status, code) => {
    llm.enqueue(httpError(status));
    const error = terminal(await collect(provider().stream(request())), "error").error;
    expect(error).toMatchObject({ code, status, retryable: false });
  });

  it("reports a missing apiKeyEnv variable as CONFIG_ERROR naming it and the fix, without calling the server", async () => {
    const p = createOpenAiProvider("fake", config, { env: {} });
    const error = terminal(await collect(p.stream(request())), "error").error;
    expect(error).toMatchObject({ code: "CONFIG_ERROR", retryable: false });
    expect(error.message).toMatch(/provider "fake", whose key variable FAKE_KEY \(apiKeyEnv\) is not set: export FAKE_KEY=<key>/);
    expect(llm.requests).toHaveLength(0);
  });

  it("ends a hanging request with a retryable TIMEOUT error instead of throwing", async () => {
    llm.enqueue(hang());
    const error = terminal(await collect(provider({ timeoutMs: 50 }).stream(request())), "error").error;
    expect(error).toMatchObject({ code: "TIMEOUT", retryable: true });
  });

  it("times out between chunks after output as a non-retryable TIMEOUT, keeping the partial", async () => {
    llm.enqueue(reply().text("partial").waitFor(new Promise(() => undefined)).text("never").stop());
    // generous: "partial" must arrive before the idle timer fires even on a loaded machine
    const events = await collect(provider({ timeoutMs: 500 }).stream(request()));
    const end = terminal(events, "error");
    expect(end.error).toMatchObject({ code: "TIMEOUT", retryable: false });
    expect(end.partial.content).toBe("partial");
  });

  it("reports a mid-stream reset after the partial text, as not retryable", async () => {
    llm.enqueue(reply().text("partial").reset());
    const events = await collect(provider().stream(request()));
    expect(events[0]).toEqual({ type: "text", delta: "partial" });
    const end = terminal(events, "error");
    expect(end.error).toMatchObject({ code: "PROVIDER_ERROR", retryable: false });
    expect(end.partial.content).toBe("partial");
  });

  it("reports a reset before any output as retryable", async () => {
    llm.enqueue(reply().reset());
    const end = terminal(await collect(provider().stream(request())), "error");
    expect(end.error.retryable).toBe(true);
  });

  it("ends with CANCELLED when the signal aborts mid-stream", async () => {
    let release!: () => void;
    llm.enqueue(reply().text("a").waitFor(new Promise<void>((r) => (release = r))).text("b").stop());
    const controller = new AbortController();
    const events: StreamEvent[] = [];
    for await (const event of provider().stream(request({ signal: controller.signal }))) {
      events.push(event);
      if (event.type === "text") controller.abort();
    }
    release();
    const end = terminal(events, "error");
    expect(end.error).toMatchObject({ code: "CANCELLED", retryable: false });
    expect(end.partial.content).toBe("a");
  });

  it("ends a stream with a data line that is not a JSON chunk as a retryable LLM_ERROR naming the provider", async () => {
    for (const garbled of ["{not json}", "42", "[1]", "null", '"x"']) {
      llm.enqueue(replay([garbled, "{still not json}", "[DONE]"]));
      const end = terminal(await collect(provider().stream(request())), "error");
      expect(end.error).toMatchObject({ code: "LLM_ERROR", retryable: true });
      expect(end.error.message).toBe(`fake: unreadable stream from model "m1": a data line is not a JSON chunk: ${garbled}`);
    }
  });

  it("a stream that ends before any chunk (only [DONE], or nothing) is a retryable LLM_ERROR, not an empty answer", async () => {
    for (const payloads of [["[DONE]"], []]) {
      llm.enqueue(replay(payloads));
      const end = terminal(await collect(provider().stream(request())), "error");
      expect(end.error).toEqual({ code: "LLM_ERROR", retryable: true, message: 'fake: empty stream from model "m1": it ended before any chunk' });
    }
  });

  it("after output, an unreadable data line ends the stream as a non-retryable error keeping the partial", async () => {
    llm.enqueue(reply().text("Hel").raw("{not json").text("lo").stop());
    const end = terminal(await collect(provider().stream(request())), "error");
    expect(end.error).toMatchObject({ code: "LLM_ERROR", retryable: false });
    expect(end.partial.content).toBe("Hel");
  });

  it("skips empty data lines (keep-alives) in a stream", async () => {
    llm.enqueue(reply().raw("").text("ok").raw("  ").stop());
    const done = terminal(await collect(provider().stream(request())), "done");
    expect(done.message.content).toBe("ok");
  });

  it("keeps malformed tool arguments verbatim for the loop to reject", async () => {
    llm.enqueue(reply().rawToolCall("x", "{not json").stop());
    const done = terminal(await collect(provider().stream(request())), "done");
    expect(done.message.toolCalls).toEqual([{ id: "call_0_x", name: "x", arguments: "{not json" }]);
  });

  it("handles a server that answers stream:true with one JSON completion", async () => {
    const server = await startFakeLlm();
    try {
      // the fake answers JSON when stream is not true; point a provider at it with a fetch that drops `stream`
      server.enqueue(reply().thinking("t").text("json").tool("glob", { pattern: "*" }).stop());
      const http = nodeHttpTransport();
      const p = createOpenAiProvider("fake", { type: "openai", baseUrl: server.baseUrl }, {
        env: {},
        transport: (url, call) => {
          const body = JSON.parse(call.body);
          delete body.stream;
          return http(url, { ...call, body: JSON.stringify(body) });
        },
      });
      const events = await collect(p.stream(request()));
      expect(events.some((e) => e.type === "tool_call_start" && e.name === "glob")).toBe(true);
      const done = terminal(events, "done");
      expect(done.message).toMatchObject({ content: "json", thinking: "t" });
      expect(done.finishReason).toBe("tool_calls");
    } finally {
      await server.close();
    }
  });

  describe("recorded provider quirks", () => {
    it("tool calls that all reuse index 0 with new ids stay separate calls", async () => {
      llm.enqueue(replayFixture("tool-calls-reuse-index-0"));
      const done = terminal(await collect(provider().stream(request())), "done");
      expect(done.message.toolCalls).toEqual([
        { id: "call_a", name: "read_file", arguments: '{"file":"/a"}' },
        { id: "call_b", name: "bash", arguments: '{"command":"ls"}' },
      ]);
    });

    it("OpenRouter `reasoning` deltas and cache-write usage", async () => {
      llm.enqueue(replayFixture("openrouter-reasoning-field"));
      const events = await collect(provider().stream(request()));
      const done = terminal(events, "done");
      expect(done.message).toEqual({ content: "Answer: 4", thinking: "Let me think.", toolCalls: [] });
      expect(done.usage).toEqual({ prompt_tokens: 1200, completion_tokens: 40, total_tokens: 1240, cached_tokens: 1000, cache_creation_tokens: 150, reasoning_tokens: 12 });
      expect(done.finishReason).toBe("stop");
    });

    it("an in-stream error object after output ends the stream as a non-retryable error", async () => {
      llm.enqueue(replayFixture("openrouter-in-stream-error"));
      const end = terminal(await collect(provider().stream(request())), "error");
      expect(end.error).toMatchObject({ code: "PROVIDER_ERROR", status: 502, retryable: false });
      expect(end.error.message).toContain("Upstream provider error");
      expect(end.partial.content).toBe("Partial ");
    });

    it("a whole tool call in one chunk with finish_reason stop counts as tool_calls", async () => {
      llm.enqueue(replayFixture("whole-tool-call-stop-reason"));
      const done = terminal(await collect(provider().stream(request())), "done");
      expect(done.finishReason).toBe("tool_calls");
      expect(done.message.toolCalls).toEqual([{ id: "function-call-1", name: "glob", arguments: '{"pattern":"*.ts"}' }]);
    });

    it("Anthropic-style cache usage fields and a stream without [DONE]", async () => {
      llm.enqueue(replayFixture("anthropic-style-usage-no-done"));
      const done = terminal(await collect(provider().stream(request())), "done");
      expect(done.finishReason).toBe("stop");
      expect(done.usage).toMatchObject({ prompt_tokens: 30, completion_tokens: 2, total_tokens: 32, cached_tokens: 25, cache_creation_tokens: 5 });
    });
  });
});
