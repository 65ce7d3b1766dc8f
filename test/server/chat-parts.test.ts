import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { reply } from "../helpers/fake-llm.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

const PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const VISION = { "fake-model": { input_modalities: ["text", "image"], context_window: 32000 } };

async function chat(server: Awaited<ReturnType<RuntimeHarness["serve"]>>, id: string, message: unknown) {
  return server.fetch(`/sessions/${id}/chat`, { method: "POST", body: JSON.stringify({ message }) });
}

describe("chat content parts", () => {
  it("stores text and image_url parts, sends them to the model as user content parts, and shows them in /messages", async () => {
    h = await createRuntimeHarness({ models: VISION });
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json();
    h.llm.enqueue(reply().text("a red dot").stop());
    const parts = [
      { type: "text", text: "what is in these?" },
      { type: "image_url", image_url: { url: PNG } },
      { type: "image_url", image_url: { url: "https://images.example/cat.jpg", detail: "low" } },
    ];
    const res = await chat(server, session.id, parts);
    expect(res.status).toBe(200);
    expect((await res.json()).content).toBe("a red dot");

    const user = h.llm.completionRequests[0]!.body.messages.find((m: any) => m.role === "user");
    expect(user.content).toEqual([
      { type: "text", text: "what is in these?" },
      { type: "image_url", image_url: { url: PNG } },
      { type: "image_url", image_url: { url: "https://images.example/cat.jpg" } },
    ]);
    const rows = await (await server.fetch(`/sessions/${session.id}/messages`)).json();
    const row = rows.find((r: any) => r.role === "user");
    expect(row.content).toBe("what is in these?");
    expect(row.meta.parts).toEqual(parts);
    expect(row.meta.source).toBe("http");

    // The parts stay in the history: the next turn shows the model the image again.
    h.llm.enqueue(reply().text("still a dot").stop());
    expect((await chat(server, session.id, "and now?")).status).toBe(200);
    const again = h.llm.completionRequests[1]!.body.messages.filter((m: any) => m.role === "user");
    expect(again[0].content[1]).toEqual({ type: "image_url", image_url: { url: PNG } });
    expect(again[1].content).toBe("and now?");
  });

  it("answers 400 VALIDATION_ERROR naming the bad part's index, and stores nothing", async () => {
    h = await createRuntimeHarness({ models: VISION });
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json();
    const cases: [unknown, string][] = [
      [[{ type: "text", text: "hi" }, { type: "input_audio", input_audio: { data: "x", format: "wav" } }], 'message[1]: unknown content part type "input_audio"'],
      [[{ type: "image_url", image_url: { url: "file:///etc/passwd" } }], "message[0]: an image_url part needs"],
      [[{ type: "text" }], 'message[0]: a text part needs "text"'],
      [[{ type: "image_url", image_url: { url: PNG, detail: "max" } }], "message[0]: image_url.detail"],
      [[{ type: "text", text: "  " }], "neither text nor an image"],
    ];
    for (const [message, expected] of cases) {
      const res = await chat(server, session.id, message);
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error.code).toBe("VALIDATION_ERROR");
      expect(body.error.message).toContain(expected);
    }
    for (const message of [[], [42], { type: "text", text: "x" }]) expect((await chat(server, session.id, message)).status).toBe(400);
    expect(await h.runtime.store.listMessages(session.id)).toHaveLength(0);
    expect(h.llm.completionRequests).toHaveLength(0);
  });

  it("refuses images for a text-only model with 400 naming the model; text parts alone are fine", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const session = await (await server.fetch("/sessions", { method: "POST", body: "{}" })).json();
    const res = await chat(server, session.id, [{ type: "text", text: "see" }, { type: "image_url", image_url: { url: PNG } }]);
    expect(res.status).toBe(400);
    const error = (await res.json()).error;
    expect(error.code).toBe("VALIDATION_ERROR");
    expect(error.message).toContain('model "fake-model" takes no image input');
    expect(await h.runtime.store.listMessages(session.id)).toHaveLength(0);

    h.llm.enqueue(reply().text("read you").stop());
    expect((await chat(server, session.id, [{ type: "text", text: "one" }, { type: "text", text: "two" }])).status).toBe(200);
    const user = h.llm.completionRequests[0]!.body.messages.find((m: any) => m.role === "user");
    expect(user.content).toEqual([{ type: "text", text: "one" }, { type: "text", text: "two" }]);
    const rows = await h.runtime.store.listMessages(session.id);
    expect(rows[0]!.content).toBe("one\n\ntwo");
  });

  it("takes content parts as the last user message of an agent/<name> completion", async () => {
    h = await createRuntimeHarness({ models: VISION });
    const server = await h.serve();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });
    h.llm.enqueue(reply().text("a pixel").stop());
    const answer = await client.chat.completions.create({
      model: "agent/default",
      messages: [{ role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: PNG } }] }],
    });
    expect(answer.choices[0]!.message.content).toBe("a pixel");
    const user = h.llm.completionRequests[0]!.body.messages.find((m: any) => m.role === "user");
    expect(user.content[1]).toEqual({ type: "image_url", image_url: { url: PNG } });
    const bad = await server.fetch("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ model: "agent/default", messages: [{ role: "user", content: [{ type: "file", file: {} }] }] }),
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.message).toContain("message[0]: unknown content part type");
  });
});
