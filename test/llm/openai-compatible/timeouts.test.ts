import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { loadConfig } from "../../../src/config/load.js";
import { providerTimeouts } from "../../../src/config/defaults.js";
import type { ProviderConfig } from "../../../src/config/types.js";
import { createOpenAiProvider } from "../../../src/llm/openai-compatible/client.js";
import type { StreamEvent } from "../../../src/llm/types.js";
import { hang, reply, startFakeLlm, type FakeLlm } from "../../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../../helpers/runtime.js";
import { tmpWorkspace, type TempWorkspace } from "../../helpers/workspace.js";

let llm: FakeLlm | undefined;
let ws: TempWorkspace | undefined;
let h: RuntimeHarness | undefined;
afterEach(async () => {
  await h?.close();
  await llm?.close();
  ws?.cleanup();
  h = undefined;
  llm = undefined;
  ws = undefined;
});

const never = () => new Promise<void>(() => undefined);
/** A provider's own slowness (what the test is about), not a wait for an event of ours. */
const providerTakes = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function streamOnce(config: Partial<ProviderConfig>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  const provider = createOpenAiProvider("slow", { type: "openai", baseUrl: llm!.baseUrl, apiKey: "k", ...config }, { env: {} });
  for await (const event of provider.stream({ model: "m1", messages: [{ role: "user", content: "hi" }] })) events.push(event);
  return events;
}

describe("provider settings firstByteTimeoutMs and idleTimeoutMs", () => {
  it("default to 600000 and 120000; the older timeoutMs is the default of both; each wins for its phase", () => {
    expect(providerTimeouts({})).toEqual({ firstByteMs: 600_000, idleMs: 120_000 });
    expect(providerTimeouts({ timeoutMs: 5000 })).toEqual({ firstByteMs: 5000, idleMs: 5000 });
    expect(providerTimeouts({ timeoutMs: 5000, firstByteTimeoutMs: 900_000 })).toEqual({ firstByteMs: 900_000, idleMs: 5000 });
    expect(providerTimeouts({ timeoutMs: 5000, idleTimeoutMs: 30_000 })).toEqual({ firstByteMs: 5000, idleMs: 30_000 });
  });

  it.each([
    [{ firstByteTimeoutMs: 0 }, /settings\.json: "providers\.local\.firstByteTimeoutMs" must be >= 1/],
    [{ idleTimeoutMs: -5 }, /settings\.json: "providers\.local\.idleTimeoutMs" must be >= 1/],
    [{ idleTimeoutMs: 1.5 }, /settings\.json: "providers\.local\.idleTimeoutMs" must be integer/],
    [{ firstByteTimeoutMs: "600000" }, /settings\.json: "providers\.local\.firstByteTimeoutMs" must be integer/],
  ])("are validated in settings.json: %j", (fields, message) => {
    ws = tmpWorkspace({ files: { ".veil/settings.json": JSON.stringify({ providers: { local: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", ...fields } } }) } });
    expect(() => loadConfig({ workspace: ws!.root, env: { VEIL_HOME: join(ws!.root, "home") } })).toThrow(message);
  });

  it("load from settings.json", () => {
    ws = tmpWorkspace({
      files: { ".veil/settings.json": JSON.stringify({ providers: { local: { type: "openai", baseUrl: "http://127.0.0.1:1/v1", firstByteTimeoutMs: 900000, idleTimeoutMs: 30000 } } }) },
    });
    const config = loadConfig({ workspace: ws.root, env: { VEIL_HOME: join(ws.root, "home") } });
    expect(config.settings.providers.local).toMatchObject({ firstByteTimeoutMs: 900000, idleTimeoutMs: 30000 });
  });

  it("the first byte of the body may take up to firstByteTimeoutMs, even when the headers came at once and idleTimeoutMs is shorter", async () => {
    llm = await startFakeLlm();
    llm.enqueue(reply().stallBody(providerTakes(400)).text("after a long prefill").stop());
    const events = await streamOnce({ firstByteTimeoutMs: 10_000, idleTimeoutMs: 100 });
    expect(events.at(-1)).toMatchObject({ type: "done", message: { content: "after a long prefill" } });
  });

  it("headers and then no body: a retryable TIMEOUT after firstByteTimeoutMs, naming the setting", async () => {
    llm = await startFakeLlm();
    llm.enqueue(reply().stallBody(never()).text("never").stop());
    const events = await streamOnce({ firstByteTimeoutMs: 150, idleTimeoutMs: 60_000 });
    expect(events.at(-1)).toMatchObject({
      type: "error",
      error: { code: "TIMEOUT", retryable: true, message: 'slow: no data from model "m1" for 150 ms (waiting for the first byte; firstByteTimeoutMs)' },
    });
  });

  it("no answer at all: the same first-byte TIMEOUT", async () => {
    llm = await startFakeLlm();
    llm.enqueue(hang());
    const events = await streamOnce({ firstByteTimeoutMs: 150, idleTimeoutMs: 60_000 });
    expect(events.at(-1)).toMatchObject({ type: "error", error: { code: "TIMEOUT", retryable: true, message: expect.stringContaining("firstByteTimeoutMs") } });
  });

  it("silence between chunks past idleTimeoutMs: a TIMEOUT naming idleTimeoutMs, the partial kept", async () => {
    llm = await startFakeLlm();
    llm.enqueue(reply().text("partial").waitFor(never()).text("never").stop());
    // generous: "partial" must follow the role chunk within the limit on a loaded machine
    const events = await streamOnce({ firstByteTimeoutMs: 60_000, idleTimeoutMs: 500 });
    expect(events.at(-1)).toMatchObject({
      type: "error",
      error: { code: "TIMEOUT", retryable: false, message: 'slow: no data from model "m1" for 500 ms (between chunks; idleTimeoutMs)' },
      partial: { content: "partial" },
    });
  });

  it("a stalled provider's TIMEOUT is retried like other timeouts; a chat answers once an attempt gets through, 504 when none does", async () => {
    // The limit covers the whole way to the first byte (a first request also loads the HTTP
    // agent and connects, and tools warm up meanwhile), so it is not tiny on a loaded machine.
    const fake = await startFakeLlm();
    llm = fake;
    h = await createRuntimeHarness({
      llm: fake,
      settings: {
        providers: { slow: { type: "openai", baseUrl: fake.baseUrl, apiKey: "k", firstByteTimeoutMs: 1000, idleTimeoutMs: 60_000 } },
        retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 5 },
      },
    });
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default", model: "slow/m1" }) })).json();
    const chat = (message: string) => server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message }) });

    fake.enqueue(reply().stallBody(never()).stop(), reply().text("second attempt").stop());
    const answered = await chat("one");
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ content: "second attempt" });
    expect(fake.completionRequests).toHaveLength(2);

    fake.enqueue(hang(), reply().stallBody(never()).stop());
    const failed = await chat("two");
    expect(failed.status).toBe(504);
    expect((await failed.json()).error).toEqual({ code: "TIMEOUT", message: 'slow: no data from model "m1" for 1000 ms (waiting for the first byte; firstByteTimeoutMs)' });
    expect(fake.completionRequests).toHaveLength(4);
  });
});
