import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hang, httpError, reply, startFakeLlm, type FakeLlm } from "../helpers/fake-llm.js";

/** Reads an SSE body into its parsed `data:` payloads ("[DONE]" kept as a string). */
async function readSse(res: Response): Promise<unknown[]> {
  const text = await res.text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice(6))
    .map((data) => (data === "[DONE]" ? data : JSON.parse(data)));
}

function post(llm: FakeLlm, body: object): Promise<Response> {
  return fetch(`${llm.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer k" },
    body: JSON.stringify(body),
  });
}

describe("fake LLM server", () => {
  let llm: FakeLlm;
  beforeEach(async () => {
    llm = await startFakeLlm();
  });
  afterEach(async () => {
    await llm.close();
  });

  it("streams text, split tool-call arguments, finish reason, usage and [DONE]", async () => {
    llm.enqueue(reply().thinking("hmm").text("Hi").tool("read_file", { file: "/x" }).usage({ prompt_tokens: 10, completion_tokens: 5, cached_tokens: 3 }).stop());
    const res = await post(llm, { model: "m1", stream: true, messages: [{ role: "user", content: "hello" }] });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const events = (await readSse(res)) as any[];
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1);
    expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === "m1")).toBe(true);
    const deltas = chunks.filter((c) => c.choices.length > 0).map((c) => c.choices[0].delta);
    expect(deltas.some((d) => d.reasoning_content === "hmm")).toBe(true);
    expect(deltas.some((d) => d.content === "Hi")).toBe(true);
    const toolDeltas = deltas.filter((d) => d.tool_calls).map((d) => d.tool_calls[0]);
    expect(toolDeltas[0]).toMatchObject({ index: 0, id: "call_0_read_file", function: { name: "read_file", arguments: "" } });
    expect(toolDeltas.length).toBeGreaterThan(2);
    expect(toolDeltas.slice(1).every((t) => t.id === undefined && t.function.name === undefined)).toBe(true);
    expect(JSON.parse(toolDeltas.map((t) => t.function.arguments).join(""))).toEqual({ file: "/x" });
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish.choices[0].finish_reason).toBe("tool_calls");
    const usage = chunks.at(-1).usage;
    expect(usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 3 } });
    expect(llm.requests[0]!.body.messages[0].content).toBe("hello");
    expect(llm.requests[0]!.headers.authorization).toBe("Bearer k");
  });

  it("answers a non-streaming request with a chat.completion built from the same reply", async () => {
    llm.enqueue(reply().text("Hello").reasoningField("reasoning").thinking("t").stop());
    const res = await post(llm, { model: "m2", messages: [] });
    const body = (await res.json()) as any;
    expect(body.object).toBe("chat.completion");
    expect(body.choices[0]).toMatchObject({ message: { role: "assistant", content: "Hello", reasoning: "t" }, finish_reason: "stop" });
  });

  it("serves replies FIFO, then the responder, then a loud 500", async () => {
    llm.enqueue(httpError(429, { retryAfter: "1" }));
    llm.respond((req) => reply().text(`echo ${req.body.model}`).stop());
    const first = await post(llm, { model: "a", stream: true, messages: [] });
    expect(first.status).toBe(429);
    expect(first.headers.get("retry-after")).toBe("1");
    expect(((await first.json()) as any).error.type).toBe("rate_limit_error");
    const second = (await readSse(await post(llm, { model: "b", stream: true, messages: [] }))) as any[];
    expect(second.some((c) => c !== "[DONE]" && c.choices[0]?.delta?.content === "echo b")).toBe(true);
    llm.respond(null);
    const third = await post(llm, { model: "c", stream: true, messages: [] });
    expect(third.status).toBe(500);
    expect(((await third.json()) as any).error.message).toContain("no scripted reply");
    expect(llm.pending()).toBe(0);
  });

  it("pauses at waitFor and resets mid-stream", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    llm.enqueue(reply().text("a").waitFor(gate).text("b").reset());
    const res = await post(llm, { model: "m", stream: true, messages: [] });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let seen = "";
    while (!seen.includes('"content":"a"')) {
      const { value } = await reader.read();
      seen += decoder.decode(value);
    }
    expect(seen).not.toContain('"content":"b"');
    release();
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return seen;
          seen += decoder.decode(value);
        }
      })(),
    ).rejects.toThrow();
    expect(seen).toContain('"content":"b"');
    expect(seen).not.toContain("[DONE]");
  });

  it("hangs until the client aborts and records the request", async () => {
    llm.enqueue(hang());
    const controller = new AbortController();
    const pending = fetch(`${llm.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", stream: true, messages: [] }),
      signal: controller.signal,
    });
    const [request] = await llm.waitForRequests(1);
    expect(request!.body.model).toBe("m");
    controller.abort();
    await expect(pending).rejects.toThrow();
  });

  it("strictToolArguments refuses a history with tool-call arguments that are not a JSON object, without using a reply", async () => {
    const strict = await startFakeLlm({ strictToolArguments: true });
    try {
      strict.enqueue(reply().text("ok").stop());
      const call = (args: string) => ({ role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: args } }] });
      for (const args of ['{"command":"echo $(', "[1]", '"x"', "", '{"a":1} x']) {
        const res = await post(strict, { model: "m", messages: [{ role: "user", content: "u" }, call(args), { role: "tool", tool_call_id: "c1", content: "r" }] });
        expect(res.status).toBe(400);
        expect(((await res.json()) as any).error.message).toContain("messages[1].tool_calls[0].function.arguments");
      }
      expect(strict.refusedToolArguments).toHaveLength(5);
      const ok = await post(strict, { model: "m", messages: [{ role: "user", content: "u" }, call('{"command":"ls"}'), { role: "tool", tool_call_id: "c1", content: "r" }] });
      expect(ok.status).toBe(200);
      expect(strict.pending()).toBe(0);
    } finally {
      await strict.close();
    }
  });
});
