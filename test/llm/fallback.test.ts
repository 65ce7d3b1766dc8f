import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelInfo, Settings } from "../../src/config/types.js";
import { ManualClock, systemClock, type Clock } from "../../src/base/clock.js";
import { createLlmClient, type ProviderFactory } from "../../src/llm/fallback.js";
import { createOpenAiProvider } from "../../src/llm/openai-compatible/client.js";
import type { StreamEvent } from "../../src/llm/types.js";
import { fakeProviderSettings, hang, httpError, reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** A real clock whose sleeps record the requested delay and return at once. */
function recordingClock(): { clock: Clock; slept: number[] } {
  const slept: number[] = [];
  return {
    slept,
    clock: {
      ...systemClock,
      async sleep(ms, signal) {
        slept.push(ms);
        if (signal?.aborted) throw signal.reason;
      },
    },
  };
}

describe("createLlmClient (retries and fallback)", () => {
  let llm: FakeLlm;
  let settings: Settings;
  const messages = [{ role: "user" as const, content: "hi" }];
  beforeEach(async () => {
    llm = await startFakeLlm();
    settings = fakeProviderSettings(llm, { maxRetries: 2, baseDelayMs: 100, maxDelayMs: 1000 });
  });
  afterEach(async () => {
    await llm.close();
  });
  const models = (): string[] => llm.completionRequests.map((r) => r.body.model);

  it("retries a 429 honouring Retry-After, then succeeds on the same model", async () => {
    const { clock, slept } = recordingClock();
    llm.enqueue(httpError(429, { retryAfter: "0.5" }), reply().text("ok").stop());
    const events = await collect(createLlmClient({ settings, models: {}, env: {}, clock }).stream({ modelKey: "fake/a", messages }));
    expect(slept).toEqual([500]);
    expect(models()).toEqual(["a", "a"]);
    expect(events.filter((e) => e.type === "start")).toEqual([
      { type: "start", model: "fake/a" },
      { type: "start", model: "fake/a" },
    ]);
    const end = events.at(-1)!;
    expect(end).toMatchObject({ type: "done", model: "fake/a", message: { content: "ok" } });
  });

  it("caps Retry-After and backoff at maxDelayMs and doubles the backoff", async () => {
    const { clock, slept } = recordingClock();
    settings.retry = { maxRetries: 3, baseDelayMs: 300, maxDelayMs: 1000 };
    llm.enqueue(httpError(429, { retryAfter: "60" }), httpError(500), httpError(500), reply().text("ok").stop());
    const events = await collect(createLlmClient({ settings, models: {}, env: {}, clock }).stream({ modelKey: "fake/a", messages }));
    expect(slept).toEqual([1000, 600, 1000]);
    expect(events.at(-1)!.type).toBe("done");
  });

  it("after maxRetries of 500s falls back through the model's fallbacks, then settings.fallbackModels", async () => {
    const { clock, slept } = recordingClock();
    settings.fallbackModels = ["fake/c"];
    const catalogue: Record<string, ModelInfo> = { "fake/a": { input_modalities: ["text"], context_window: 1000, fallbacks: ["fake/b"] } };
    llm.enqueue(httpError(500), httpError(500), httpError(500), httpError(404), reply().text("from c").stop());
    const events = await collect(createLlmClient({ settings, models: catalogue, env: {}, clock }).stream({ modelKey: "fake/a", messages }));
    expect(models()).toEqual(["a", "a", "a", "b", "c"]);
    expect(slept).toEqual([100, 200]); // 404 moves on without a retry
    expect(events.filter((e) => e.type === "start").map((e) => (e as { model: string }).model)).toEqual(["fake/a", "fake/a", "fake/a", "fake/b", "fake/c"]);
    expect(events.at(-1)).toMatchObject({ type: "done", model: "fake/c", message: { content: "from c" } });
  });

  it("does not retry a 400 and does not fall back", async () => {
    settings.fallbackModels = ["fake/b"];
    llm.enqueue(httpError(400, { message: "bad request" }));
    const events = await collect(createLlmClient({ settings, models: {}, env: {}, clock: recordingClock().clock }).stream({ modelKey: "fake/a", messages }));
    expect(llm.completionRequests).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: "error", model: "fake/a", error: { code: "VALIDATION_ERROR" } });
  });

  it("ends after all models fail with an error naming the chain", async () => {
    settings.retry.maxRetries = 0;
    settings.fallbackModels = ["fake/b"];
    llm.enqueue(httpError(503), httpError(502));
    const events = await collect(createLlmClient({ settings, models: {}, env: {}, clock: recordingClock().clock }).stream({ modelKey: "fake/a", messages }));
    expect(models()).toEqual(["a", "b"]);
    const end = events.at(-1)!;
    expect(end.type).toBe("error");
    expect((end as { error: { message: string } }).error.message).toContain("fake/a, fake/b");
  });

  it("treats an error after output as final: no retry, no duplicate output", async () => {
    settings.fallbackModels = ["fake/b"];
    llm.enqueue(reply().text("partial").reset());
    const events = await collect(createLlmClient({ settings, models: {}, env: {}, clock: recordingClock().clock }).stream({ modelKey: "fake/a", messages }));
    expect(llm.completionRequests).toHaveLength(1);
    expect(events.map((e) => e.type)).toEqual(["start", "text", "error"]);
    expect(events.at(-1)).toMatchObject({ partial: { content: "partial" } });
  });

  it("a hung provider times out and the next attempt is made", async () => {
    // The same limit holds the second attempt, which must beat it: a loopback answer of the fake
    // model can take hundreds of ms on a loaded machine (real timers: the silence limits are not on the clock).
    settings.providers.fake!.timeoutMs = 2000;
    settings.retry.maxRetries = 1;
    llm.enqueue(hang(), reply().text("second try").stop());
    const events = await collect(createLlmClient({ settings, models: {}, env: {}, clock: recordingClock().clock }).stream({ modelKey: "fake/a", messages }));
    expect(llm.completionRequests).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({ type: "done", message: { content: "second try" } });
  });

  it("aborting during the retry backoff ends with CANCELLED", async () => {
    const clock = new ManualClock();
    llm.enqueue(httpError(500));
    const controller = new AbortController();
    const pending = collect(createLlmClient({ settings, models: {}, env: {}, clock }).stream({ modelKey: "fake/a", messages, signal: controller.signal }));
    await llm.waitForRequests(1);
    controller.abort();
    const events = await pending;
    expect(events.at(-1)).toMatchObject({ type: "error", error: { code: "CANCELLED" } });
    expect(llm.completionRequests).toHaveLength(1);
  });

  it("an unresolvable key in the chain is skipped to the next model", async () => {
    settings.defaultProvider = undefined;
    settings.providers.other = { type: "openai", baseUrl: "http://127.0.0.1:9/v1" };
    settings.fallbackModels = ["fake/b"];
    llm.enqueue(reply().text("b").stop());
    const events = await collect(createLlmClient({ settings, models: {}, env: {}, clock: recordingClock().clock }).stream({ modelKey: "nowhere-model", messages }));
    expect(models()).toEqual(["b"]);
    expect(events.at(-1)).toMatchObject({ type: "done", model: "fake/b" });
  });

  it("creates one provider instance per provider name", async () => {
    const created: string[] = [];
    const factory: ProviderFactory = (name, config, env) => {
      created.push(name);
      return createOpenAiProvider(name, config, { env });
    };
    llm.respond(() => reply().text("x").stop());
    const client = createLlmClient({ settings, models: {}, env: {}, clock: recordingClock().clock, providerFactory: factory });
    await collect(client.stream({ modelKey: "fake/a", messages }));
    await collect(client.stream({ modelKey: "fake/b", messages }));
    expect(created).toEqual(["fake"]);
    expect(models()).toEqual(["a", "b"]);
  });
});
