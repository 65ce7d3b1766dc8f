import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { VeilError } from "../../src/errors.js";
import { createChunkEncoder, fromWireMessages, toChatCompletionChunks } from "../../src/llm/chat-completion.js";
import { createOpenAiProvider } from "../../src/llm/openai-compatible/client.js";
import { callWithProviderFallback, extractMessage } from "../../src/llm/provider-api.js";
import type { StreamEvent } from "../../src/llm/types.js";
import { httpError, replay, reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";

describe("callWithProviderFallback + extractMessage", () => {
  let llm: FakeLlm;
  let settings: Record<string, unknown>;
  beforeEach(async () => {
    llm = await startFakeLlm();
    // Shaped like a custom tool's _settings: no retry block, key from env.
    settings = { providers: { fake: { type: "openai", baseUrl: llm.baseUrl, apiKeyEnv: "FAKE_KEY" } }, defaultProvider: "fake" };
  });
  afterEach(async () => {
    await llm.close();
  });

  it("returns a chat.completion whose extracted content is the model's text, streaming chunks to onChunk", async () => {
    llm.enqueue(reply().thinking("pondering").text("One ").text("sentence.").usage({ prompt_tokens: 7, completion_tokens: 3, cached_tokens: 2 }).stop());
    const chunks: string[] = [];
    const result = await callWithProviderFallback({
      settings,
      modelId: "fake/summarizer",
      messages: [
        { role: "system", content: "Summarize the user's text in one sentence." },
        { role: "user", content: "long text" },
      ],
      reasoning: { effort: "low" },
      onChunk: (text) => chunks.push(text),
      env: { FAKE_KEY: "sk-x" },
    });
    expect(chunks).toEqual(["One ", "sentence."]);
    expect(result.response).toMatchObject({
      object: "chat.completion",
      model: "fake/summarizer",
      choices: [{ index: 0, message: { role: "assistant", content: "One sentence.", reasoning_content: "pondering" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, prompt_tokens_details: { cached_tokens: 2 } },
    });
    expect(extractMessage(result.response)).toEqual({ content: "One sentence.", thinkingContent: "pondering", audio: null, toolCalls: [], finishReason: "stop" });
    const [req] = await llm.waitForRequests(1);
    expect(req!.body).toMatchObject({ model: "summarizer", reasoning_effort: "low", messages: [{ role: "system" }, { role: "user", content: "long text" }] });
    expect(req!.headers.authorization).toBe("Bearer sk-x");
  });

  it("passes wire tools and returns tool calls in wire shape", async () => {
    llm.enqueue(reply().tool("lookup", { q: "x" }).stop());
    const { response } = await callWithProviderFallback({
      settings,
      modelId: "fake/m",
      messages: [{ role: "user", content: "find x" }],
      tools: [{ type: "function", function: { name: "lookup", description: "Look up", parameters: { type: "object", properties: { q: { type: "string" } } } } }],
      env: { FAKE_KEY: "k" },
    });
    const extracted = extractMessage(response);
    expect(extracted.finishReason).toBe("tool_calls");
    expect(extracted.content).toBeNull();
    expect(extracted.toolCalls).toEqual([{ id: "call_0_lookup", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }]);
    expect((await llm.waitForRequests(1))[0]!.body.tools[0].function.name).toBe("lookup");
  });

  it("throws an Error carrying the code after the chain fails", async () => {
    llm.enqueue(httpError(401, { message: "bad key" }));
    const call = callWithProviderFallback({ settings, modelId: "fake/m", messages: [{ role: "user", content: "x" }], env: { FAKE_KEY: "k" } });
    await expect(call).rejects.toBeInstanceOf(VeilError);
    await expect(call).rejects.toMatchObject({ code: "LLM_ERROR", message: expect.stringContaining("bad key"), details: { providerStatus: 401 } });
  });

  it("uses settings.defaultModel when modelId is absent", async () => {
    llm.enqueue(reply().text("d").stop());
    settings.defaultModel = "fake/default-one";
    await callWithProviderFallback({ settings, messages: [{ role: "user", content: "x" }], env: { FAKE_KEY: "k" } });
    expect((await llm.waitForRequests(1))[0]!.body.model).toBe("default-one");
  });

  it("extractMessage gives nulls and [] for an empty response", () => {
    expect(extractMessage({})).toEqual({ content: null, thinkingContent: null, audio: null, toolCalls: [], finishReason: null });
  });
});

describe("chat-completion helpers", () => {
  it("converts wire messages, including data-URL images, audio and assistant tool calls", () => {
    const messages = fromWireMessages([
      { role: "developer", content: "dev" },
      { role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: "data:image/jpeg;base64,QUJD" } }, { type: "input_audio", input_audio: { data: "WA==", format: "mp3" } }] },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "res" },
    ]);
    expect(messages).toEqual([
      { role: "system", content: "dev" },
      { role: "user", content: [{ type: "text", text: "look" }, { type: "image", mediaType: "image/jpeg", data: "QUJD" }, { type: "audio", mediaType: "audio/mpeg", data: "WA==" }] },
      { role: "assistant", content: null, thinking: null, toolCalls: [{ id: "c1", name: "f", arguments: "{}" }] },
      { role: "tool", toolCallId: "c1", content: "res" },
    ]);
    expect(() => fromWireMessages([{ role: "wizard", content: "x" }])).toThrow(/unknown role/);
  });

  it("chunks produced by the encoder parse back into the same message through a real provider", async () => {
    const llm = await startFakeLlm();
    try {
      const events: StreamEvent[] = [
        { type: "start", model: "k" },
        { type: "thinking", delta: "hm" },
        { type: "text", delta: "Hi" },
        { type: "tool_call_start", index: 0, id: "c9", name: "bash" },
        { type: "tool_call_delta", index: 0, argumentsDelta: '{"command":' },
        { type: "tool_call_delta", index: 0, argumentsDelta: '"ls"}' },
        {
          type: "done",
          message: { content: "Hi", thinking: "hm", toolCalls: [{ id: "c9", name: "bash", arguments: '{"command":"ls"}' }] },
          finishReason: "tool_calls",
          usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6, cached_tokens: 1, cache_creation_tokens: 0, reasoning_tokens: 0 },
          model: "k",
        },
      ];
      async function* source() {
        yield* events;
      }
      const chunks: object[] = [];
      for await (const chunk of toChatCompletionChunks(source(), { id: "x", model: "k", created: 1 })) chunks.push(chunk);
      llm.enqueue(replay([...chunks, "[DONE]"]));
      const back: StreamEvent[] = [];
      for await (const e of createOpenAiProvider("p", { type: "openai", baseUrl: llm.baseUrl }, { env: {} }).stream({ model: "k", messages: [] })) back.push(e);
      const done = events.at(-1) as Extract<StreamEvent, { type: "done" }>;
      expect(back.at(-1)).toEqual(done);
      expect(back.slice(0, -1)).toEqual(events.slice(1, -1));
    } finally {
      await llm.close();
    }
  });

  it("encodes an error as a final chunk with an error object", () => {
    const encoder = createChunkEncoder({ id: "x", model: "m", created: 1 });
    const chunks = encoder.encode({
      type: "error",
      error: { code: "RATE_LIMITED", message: "slow", retryable: true },
      partial: { content: null, thinking: null, toolCalls: [] },
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cached_tokens: 0, cache_creation_tokens: 0, reasoning_tokens: 0 },
      model: "m",
    });
    expect(chunks.at(-1)).toMatchObject({ choices: [], error: { code: "RATE_LIMITED", message: "slow" } });
  });
});
