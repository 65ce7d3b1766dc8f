import { afterEach, describe, expect, it } from "vitest";
import { httpError, reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";
import { createRuntimeHarness, type RuntimeHarness } from "../helpers/runtime.js";

let h: RuntimeHarness;
let llm: FakeLlm;
afterEach(async () => {
  await h?.close();
  await llm?.close();
});

/** Every field OpenAI's chat completions take beyond messages, and one no SDK knows. */
function clientBody(): Record<string, unknown> {
  return {
    model: "p/primary-id",
    messages: [
      { role: "developer", content: "Answer in JSON.", name: "rules" },
      { role: "user", content: [{ type: "text", text: "Look it up." }, { type: "image_url", image_url: { url: "https://img.example/a.png", detail: "low" } }], name: "ann" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: "{\"q\":\"x\"}" } }] },
      { role: "tool", tool_call_id: "call_1", content: "found" },
    ],
    tools: [{ type: "function", function: { name: "lookup", description: "Looks up.", parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"], additionalProperties: false }, strict: true } }],
    tool_choice: { type: "function", function: { name: "lookup" } },
    parallel_tool_calls: false,
    stop: ["\n\nEND", "STOP"],
    response_format: { type: "json_schema", json_schema: { name: "answer", strict: true, schema: { type: "object", properties: { a: { type: "string" } } } } },
    temperature: 0.25,
    top_p: 0.9,
    seed: 42,
    user: "user-7",
    logprobs: true,
    top_logprobs: 3,
    frequency_penalty: 0.5,
    presence_penalty: -0.5,
    n: 1,
    metadata: { trace: "abc-123" },
    max_completion_tokens: 300,
    max_tokens: 301,
    reasoning_effort: "low",
    logit_bias: { "50256": -100 },
    service_tier: "auto",
    store: false,
    modalities: ["text"],
    prediction: { type: "content", content: "{\"a\":" },
    web_search_options: { search_context_size: "low" },
    x_vendor_extension: { deep: [1, { a: null, b: "é" }], flag: true },
  };
}

/** A provider "p" (the fake) whose models are keyed p/<id>, with a fallback model. */
async function harness(provider: Record<string, unknown> = {}): Promise<RuntimeHarness> {
  llm = await startFakeLlm();
  h = await createRuntimeHarness({
    llm,
    settings: { providers: { p: { type: "openai", baseUrl: llm.baseUrl, apiKey: "sk-p", ...provider } }, defaultProvider: "p", fallbackModels: ["p/backup-id"] },
    env: { VEIL_BASE_URL: undefined, VEIL_MODEL: undefined },
  });
  return h;
}

/** Each field the provider got, as JSON, against the client's: equal one by one, no field more or less. */
function expectForwarded(received: Record<string, unknown>, sent: Record<string, unknown>, modelId: string): void {
  const expected = { ...sent, model: modelId };
  expect(Object.keys(received).sort()).toEqual(Object.keys(expected).sort());
  for (const field of Object.keys(expected)) expect({ field, json: JSON.stringify(received[field]) }).toEqual({ field, json: JSON.stringify(expected[field]) });
}

/**
 * Sends the body while the first model answers 500 (and its retry too), so the fallback
 * model answers; checks what each model of the chain was sent, and returns Veil's answer.
 */
async function sendThroughTheChain(sent: Record<string, unknown>, answer: ReturnType<typeof reply>): Promise<Response> {
  const h = await harness();
  const server = await h.serve();
  h.llm.enqueue(httpError(500), httpError(500), answer.stop());
  const res = await server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify(sent) });
  expect(res.status).toBe(200);
  const bodies = h.llm.completionRequests.map((r) => r.body as Record<string, unknown>);
  expect(bodies.map((b) => b.model)).toEqual(["primary-id", "primary-id", "backup-id"]);
  expectForwarded(bodies[0]!, sent, "primary-id");
  expectForwarded(bodies[2]!, sent, "backup-id");
  return res;
}

describe("the completions proxy forwards the client's body unchanged", () => {
  it("plain: every field reaches the provider as sent (model rewritten to the provider's id), on each model of the fallback chain", async () => {
    const res = await sendThroughTheChain(clientBody(), reply().text("{\"a\":\"b\"}"));
    expect(((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe("{\"a\":\"b\"}");
  });

  it("streamed: the same, stream and stream_options included", async () => {
    const sent = { ...clientBody(), stream: true, stream_options: { include_usage: true, include_obfuscation: false } };
    const res = await sendThroughTheChain(sent, reply().text("{\"a\":").text("\"b\"}").usage({ prompt_tokens: 11, completion_tokens: 3 }));
    const chunks = (await res.text()).split("\n").filter((l) => l.startsWith("data: ") && l !== "data: [DONE]").map((l) => JSON.parse(l.slice(6)));
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("{\"a\":\"b\"}");
    expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 3 });
  });

  it("a streamed body without stream_options is forwarded as it is, asking for usage besides", async () => {
    const h = await harness();
    const server = await h.serve();
    h.llm.enqueue(reply().text("ok").stop());
    const sent = { model: "p/primary-id", messages: [{ role: "user", content: "hi" }], stream: true, seed: 7 };
    await (await server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify(sent) })).text();
    expect(h.llm.completionRequests[0]!.body).toEqual({ ...sent, model: "primary-id", stream_options: { include_usage: true } });
  });

  it("reasoning_effort goes out in the provider's reasoning dialect when that is not OpenAI's; the rest as sent", async () => {
    const h = await harness({ reasoning: "openrouter" });
    const server = await h.serve();
    h.llm.enqueue(reply().text("ok").stop());
    const sent = { model: "p/primary-id", messages: [{ role: "user", content: "hi" }], reasoning_effort: "high", top_p: 0.5, x_vendor: 1 };
    await (await server.fetch("/v1/chat/completions", { method: "POST", body: JSON.stringify(sent) })).json();
    expect(h.llm.completionRequests[0]!.body).toEqual({ model: "primary-id", messages: sent.messages, reasoning: { effort: "high" }, top_p: 0.5, x_vendor: 1 });
  });
});
