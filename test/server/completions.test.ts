import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { createRuntimeHarness, TEST_SECRET, type RuntimeHarness } from "../helpers/runtime.js";
import { httpError, reply } from "../helpers/fake-llm.js";

let h: RuntimeHarness;
afterEach(async () => {
  await h?.close();
});

describe("POST /v1/chat/completions", () => {
  it("works with the official openai SDK, plain and streamed, through the fallback chain", async () => {
    h = await createRuntimeHarness({ settings: { fallbackModels: ["backup-model"] } });
    const server = await h.serve();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_SECRET, maxRetries: 0 });

    h.llm.enqueue(reply().text("plain answer").usage({ prompt_tokens: 7, completion_tokens: 2 }).stop());
    const plain = await client.chat.completions.create({ model: "fake-model", messages: [{ role: "user", content: "hi" }] });
    expect(plain.choices[0]!.message.content).toBe("plain answer");
    expect(plain.usage?.prompt_tokens).toBe(7);

    h.llm.enqueue(httpError(500), httpError(500));
    h.llm.enqueue(reply().text("from ").text("backup").tool("lookup", { q: "x" }).stop());
    const stream = await client.chat.completions.create({
      model: "fake-model",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: { q: { type: "string" } } } } }],
    });
    let text = "";
    let args = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      text += choice?.delta.content ?? "";
      args += choice?.delta.tool_calls?.[0]?.function?.arguments ?? "";
      finish = choice?.finish_reason ?? finish;
    }
    expect(text).toBe("from backup");
    expect(JSON.parse(args)).toEqual({ q: "x" });
    expect(finish).toBe("tool_calls");
    const models = h.llm.completionRequests.map((r) => r.body.model);
    expect(models).toEqual(["fake-model", "fake-model", "fake-model", "backup-model"]);
    expect(h.llm.completionRequests.at(-1)!.body.tools[0].function.name).toBe("lookup");
  });

  it("rejects a bad request body with 400 and needs the secret", async () => {
    h = await createRuntimeHarness();
    const server = await h.serve();
    const bad = await server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify({ messages: "hi" }) });
    expect(bad.status).toBe(400);
    const anon = await fetch(`${server.url}/v1/chat/completions`, { method: "POST", body: "{}" });
    expect(anon.status).toBe(401);
  });
});
