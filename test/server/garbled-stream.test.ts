import { afterEach, describe, expect, it } from "vitest";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";
import { readSse } from "../helpers/sse-client.js";
import { replay, reply } from "../helpers/fake-llm.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

/** The symptom: a 200 stream of data lines that are not JSON, then [DONE]. */
const garbled = () => replay(["{not json}", "{still not json}", "[DONE]"]);

async function harness() {
  // One retry per model, no fallback: a garbled stream is asked twice, then reported.
  h = await createRuntimeHarness({ settings: { retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 5 } } });
  const server = await h.serve();
  const session = await (await server.fetch("/sessions", { method: "POST", body: JSON.stringify({ agent: "default" }) })).json();
  return { server, session: session as { id: string } };
}

const GARBLED_MESSAGE = 'env: unreadable stream from model "fake-model": a data line is not a JSON chunk: {not json}';

describe("a garbled stream from the provider", () => {
  it("sync chat: retried like a reset, then 502 LLM_ERROR naming the provider; the session works afterwards", async () => {
    const { server, session } = await harness();
    h.llm.enqueue(garbled(), reply().text("second try").stop());
    const retried = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "one" }) });
    expect(retried.status).toBe(200);
    expect(await retried.json()).toMatchObject({ content: "second try", stopReason: "stop" });
    expect(h.llm.completionRequests).toHaveLength(2);

    h.llm.enqueue(garbled(), garbled());
    const failed = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "two" }) });
    expect(failed.status).toBe(502);
    const body = await failed.json();
    expect(body.error).toEqual({ code: "LLM_ERROR", message: GARBLED_MESSAGE });
    expect(body).toMatchObject({ stopReason: "error", finishReason: "error" });
    expect(h.llm.completionRequests).toHaveLength(4);

    h.llm.enqueue(reply().text("fine again").stop());
    const after = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "three" }) });
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({ content: "fine again", stopReason: "stop" });
  });

  it("streamed chat: the turn's chat.done carries the LLM_ERROR; the next streamed turn answers", async () => {
    const { server, session } = await harness();
    h.llm.enqueue(garbled(), garbled());
    const res = await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "go", stream: true }) });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events.at(-1)!.data).toMatchObject({ type: "chat.done", stopReason: "error", error: { code: "LLM_ERROR", message: GARBLED_MESSAGE } });
    expect(events.some((e) => e.data?.type === "chat.chunk")).toBe(false);
    expect(h.llm.completionRequests).toHaveLength(2);

    h.llm.enqueue(reply().text("streamed fine").stop());
    const next = await readSse(await server.fetch(`/sessions/${session.id}/chat`, { method: "POST", body: JSON.stringify({ message: "again", stream: true }) }));
    expect(next.at(-1)!.data).toMatchObject({ type: "chat.done", stopReason: "stop", content: "streamed fine" });
  });

  it("completions proxy, plain and streamed: retried, then 502 (the garbled plain body, the garbled stream); the next call answers", async () => {
    const { server } = await harness();
    const ask = (stream: boolean) =>
      server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify({ model: "fake-model", stream, messages: [{ role: "user", content: "hi" }] }) });

    h.llm.enqueue(garbled(), garbled());
    const plain = await ask(false);
    // The proxy forwards stream: false, so the provider's garbled answer is a plain body that is not JSON.
    expect(plain.status).toBe(502);
    expect((await plain.json()).error).toMatchObject({ code: "PROVIDER_ERROR", message: 'env: unreadable response (application/json): {not json}\n{still not json}\n[DONE]' });
    expect(h.llm.completionRequests).toHaveLength(2);

    h.llm.enqueue(garbled(), garbled());
    // It failed before any output, so the streamed call is answered with a status like a plain one.
    const streamed = await ask(true);
    expect(streamed.status).toBe(502);
    expect((await streamed.json()).error).toMatchObject({ code: "LLM_ERROR", message: GARBLED_MESSAGE });
    expect(h.llm.completionRequests).toHaveLength(4);

    h.llm.enqueue(garbled(), reply().text("proxied").stop());
    const recovered = await ask(false);
    expect(recovered.status).toBe(200);
    expect((await recovered.json()).choices[0]).toMatchObject({ message: { content: "proxied" }, finish_reason: "stop" });
  });
});
